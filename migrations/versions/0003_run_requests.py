"""The stored request of a run and one run per agent and round (DESIGN §7).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # As in 0002: the DDL of record is the .sql file next to this one, run on the raw DBAPI cursor.
    ddl = Path(__file__).with_suffix(".sql").read_text()
    with op.get_bind().connection.dbapi_connection.cursor() as cursor:  # type: ignore[union-attr]
        cursor.execute(ddl)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
