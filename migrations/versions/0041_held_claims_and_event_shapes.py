"""The database refuses what the application refuses: a claim only from a run that is live
and held by the inserting transaction, every event's payload fitting its kind, a claim's
event naming its run and version (docs/operations/security.md).

Revision ID: 0041
Revises: 0040
Create Date: 2026-12-05
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0041"
down_revision = "0040"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
