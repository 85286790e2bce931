"""The run guard by column: ``agent_runs_guard`` fires only on an UPDATE that names a
column a run's progress may not change (or may set only once), and compares columns,
not JSON copies of the whole row with its stored request.

Revision ID: 0038
Revises: 0037
Create Date: 2026-12-04
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0038"
down_revision = "0037"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
