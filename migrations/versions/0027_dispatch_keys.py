"""A dispatch's idempotency key: a retry with the same key returns the first dispatch and
creates nothing (`council dispatch --key`, the API's Idempotency-Key header).

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-04
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
