"""The evaluation as one read call, the decision in Python, one write call (issue 46 item 2):
council_evaluate_read_v1 takes a committer round's locks and reads everything its decision
needs as one document; council_evaluate_write_v1 writes every record the round makes. The
snapshot queries become functions both the committer and replay run.

Revision ID: 0044
Revises: 0043
Create Date: 2026-12-08
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0044"
down_revision = "0043"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
