"""Budgets: a thread's budget in USD (one appended row per change, the latest in force) and
the reservations a dispatch takes before any run is enqueued (per dispatch and agent: the
estimated price of one run and how many runs), reconciled from the runs' recorded cost.

Revision ID: 0035
Revises: 0034
Create Date: 2026-12-04
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0035"
down_revision = "0034"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
