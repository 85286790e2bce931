"""The evidence a run opened, for every runtime: an API run is given evidence inline and its
reads are recorded as opened evidence too, so council_v_opened_evidence sets what each run
read beside what it cited for API runs as for agent CLIs.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-04
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
