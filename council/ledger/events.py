"""The append-only event log (invariant 10): written in the same transaction as
the change it describes, never trimmed, one NOTIFY per row (by trigger)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Engine, insert, select

from council.ledger import tables as t
from council.ledger.db import unit_of_work
from council.ledger.lookup import require


def append(
    conn: Connection,
    kind: str,
    *,
    actor: str,
    thread_id: UUID | None = None,
    subject_id: UUID | str | None = None,
    payload: dict[str, Any] | None = None,
) -> int:
    return int(
        conn.execute(
            insert(t.events)
            .values(
                kind=kind,
                actor=actor,
                thread_id=thread_id,
                subject_id=str(subject_id) if subject_id is not None else None,
                payload=payload or {},
            )
            .returning(t.events.c.id)
        ).scalar_one()
    )


def append_many(
    conn: Connection,
    kind: str,
    *,
    actor: str,
    thread_id: UUID | None,
    items: Sequence[tuple[UUID | str, dict[str, Any]]],
) -> list[int]:
    """Events of one kind, one per (subject, payload), in one statement and in order."""
    if not items:
        return []
    rows = [
        {"kind": kind, "actor": actor, "thread_id": thread_id, "subject_id": str(subject), "payload": payload}
        for subject, payload in items
    ]
    result = conn.execute(insert(t.events).returning(t.events.c.id, sort_by_parameter_order=True), rows)
    return [int(row[0]) for row in result]


def list_events(
    engine: Engine, thread_id: UUID, *, after: int = 0, limit: int | None = None
) -> list[dict[str, Any]]:
    """Every event of a thread in order; ``limit`` pages, it never truncates silently."""
    with unit_of_work(engine) as conn:
        require(conn, t.threads, thread_id, "thread")
        query = (
            select(t.events)
            .where(t.events.c.thread_id == thread_id, t.events.c.id > after)
            .order_by(t.events.c.id)
        )
        if limit is not None:
            query = query.limit(limit)
        return [dict(row) for row in conn.execute(query).mappings()]
