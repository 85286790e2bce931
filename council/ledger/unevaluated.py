"""Versions whose claims no evaluation saw: the evaluations the sweep re-enqueues."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import Connection

from council.sql import query


def unevaluated_versions(conn: Connection, *, settle_s: float, limit: int) -> list[UUID]:
    """Open or tentative heads with claims that no evaluation or consolidation of
    them saw, whose newest claim is older than ``settle_s``; oldest first."""
    rows = conn.execute(query("unevaluated_versions"), {"settle_s": settle_s, "limit": limit})
    return [UUID(str(row.id)) for row in rows]
