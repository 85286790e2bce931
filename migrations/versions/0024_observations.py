"""Observing real disagreement: imported debates (their provenance) and resolutions.

Revision ID: 0024
Revises: 0021
Create Date: 2026-12-03
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0024"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
