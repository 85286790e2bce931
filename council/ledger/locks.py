"""Transaction-scoped advisory locks (named SQL in council/sql/locks.sql)."""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

from sqlalchemy import Connection

from council.sql import query


def lock_node(conn: Connection, logical_node_id: UUID | str) -> None:
    conn.execute(query("lock_node"), {"logical_node_id": str(logical_node_id)})


def lock_evidence_shared(conn: Connection, evidence_ids: Iterable[UUID | str]) -> None:
    ids = sorted({str(e) for e in evidence_ids})
    if ids:
        conn.execute(query("lock_evidence_shared"), {"evidence_ids": ids})


def lock_evidence_exclusive(conn: Connection, evidence_id: UUID | str) -> None:
    conn.execute(query("lock_evidence_exclusive"), {"evidence_id": str(evidence_id)})


def lock_proposal(conn: Connection, proposal_id: UUID | str) -> None:
    conn.execute(query("lock_proposal"), {"proposal_id": str(proposal_id)})


def lock_dispatch_key(conn: Connection, key: str) -> None:
    conn.execute(query("lock_dispatch_key"), {"key": key})
