"""The application's role, which owns nothing, and a derived-column guard that trusts history
(docs/architecture.md §11).

Revision ID: 0007
Revises: 0005
Create Date: 2026-12-14
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
