"""The figures of `council eval` a dashboard reads: each turn's answer against the truth,
and each agent's first and last accuracy (the same definitions as docs/guide/observe.md).

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-03
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
