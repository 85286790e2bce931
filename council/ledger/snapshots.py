"""Loading consolidation snapshots from the ledger (queries in council/sql/snapshot.sql)."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from sqlalchemy import Connection

from council.domain.snapshot import build_snapshot
from council.ledger.locks import lock_evidence_shared
from council.sql import query


def manifest(conn: Connection, version_id: UUID) -> dict[str, Any]:
    """Ids of every row the decision depends on, chosen in one statement."""
    result = conn.execute(query("snapshot_manifest"), {"version_id": version_id}).scalar_one()
    return dict(result)


def snapshot_from_manifest(conn: Connection, named: dict[str, Any]) -> dict[str, Any]:
    rows = conn.execute(query("snapshot_rows"), {"manifest": json.dumps(named)}).scalar_one()
    return build_snapshot(rows)


def evidence_ids(named: dict[str, Any]) -> set[str]:
    return {str(e["id"]) for e in named["evidence"]}


def locked_snapshot(conn: Connection, version_id: UUID, locked: set[str]) -> dict[str, Any]:
    """The snapshot, with shared locks held on every evidence item it cites.

    Call with the node lock held and shared locks already taken on ``locked``
    (the evidence cited on the version a statement ago). The evidence locks
    come before the manifest that reads validity; if the manifest names
    evidence cited meanwhile, lock that too and take the manifest again.
    """
    while True:
        named = manifest(conn, version_id)
        extra = evidence_ids(named) - locked
        if not extra:
            return snapshot_from_manifest(conn, named)
        lock_evidence_shared(conn, extra)
        locked |= extra


def current_snapshot(conn: Connection, version_id: UUID) -> dict[str, Any]:
    """The snapshot as of now, without locks (for reads such as `council groups`)."""
    return snapshot_from_manifest(conn, manifest(conn, version_id))
