"""A run's status moves only forward, and a finished run is never rewritten (docs/architecture.md §7:
the record of what ran cannot be edited after the fact, even by the application role).

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-04
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
