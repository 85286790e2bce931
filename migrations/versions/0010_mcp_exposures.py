"""Exposures served over MCP say so: `mcp:reentry_packet` and `mcp:node_status` channels
(docs/architecture.md §3 and §7).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
