"""A claim is never without its event (docs/architecture.md §7: what the record says happened, happened
with its trace in the log), even as the application role.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-04
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
