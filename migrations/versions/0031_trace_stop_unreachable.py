"""An agent-CLI call may be stopped because its provider could not be reached: Council's
provider proxy answered 502 and the attempt ended at once instead of letting the CLI retry
for minutes (run_traces.stopped gains 'provider unreachable').

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-04
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
