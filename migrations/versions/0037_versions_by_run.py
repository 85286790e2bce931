"""Versions by the run that made them: a dispatch's runs are evaluated once a round, and the
run that closes a round finds the versions the round's runs made (a revision carries no
claim of its maker's) by ``node_versions.created_by_run_id``.

Revision ID: 0037
Revises: 0036
Create Date: 2026-12-04
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0037"
down_revision = "0036"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
