"""Who reviews a retraction proposal: the thread's reviewers beside its review setting.

Revision ID: 0021
Revises: 0017
Create Date: 2026-12-03
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0021"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
