"""One SQL function per run phase (issue 46 item 2): council_begin_run_v1 claims a run for
an attempt and returns, in the same call, what its request is compiled from.

Revision ID: 0042
Revises: 0041
Create Date: 2026-12-07
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0042"
down_revision = "0041"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
