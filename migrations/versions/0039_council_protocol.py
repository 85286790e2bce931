"""The council protocol and simultaneous rounds: a dispatch mode ``council`` (round 1
proposes, round 2 cross-reviews blind, rounds 3+ deliberate), each round's shared briefing
stored once when the round opens (content-addressed), and the questions asked on a thread.

Revision ID: 0039
Revises: 0038
Create Date: 2026-12-07
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0039"
down_revision = "0038"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
