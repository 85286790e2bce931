"""council_v_costs: what runs cost per thread, dispatch, agent, provider and model (runs,
tokens, USD over the priced runs, runs without a price), readable by the dashboard role.

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-04
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
