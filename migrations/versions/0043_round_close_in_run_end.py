"""A run's end says whether its round closed (issue 46 item 2): council_apply_run_v2 and
council_round_state_v1 under the dispatch's lock; council_end_run_v2 also reads the rivals
of what the output claims on.

Revision ID: 0043
Revises: 0042
Create Date: 2026-12-08
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0043"
down_revision = "0042"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
