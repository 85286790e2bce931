"""The logical-node lock key is one SQL function, council_node_lock_key_v1(uuid), which every
statement that takes, orders by or reports a node lock calls (the key written out once; its
value unchanged, so a lock taken by an earlier release's statement and one taken through the
function are the same lock).

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-04
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
