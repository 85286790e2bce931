"""The append-only event log (invariant 10): written in the same transaction as
the change it describes, never trimmed, one NOTIFY per row (by trigger)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, func, insert, select

from council.domain.results.events import Event
from council.ledger import tables as t


def append(
    conn: Connection,
    kind: str,
    *,
    actor: str,
    thread_id: UUID | None = None,
    subject_id: UUID | str | None = None,
    payload: dict[str, Any] | None = None,
) -> int:
    """One event, in the caller's transaction (every store writes its events so)."""
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


class Events:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def append(
        self,
        kind: str,
        *,
        actor: str,
        thread_id: UUID | None = None,
        subject_id: UUID | str | None = None,
        payload: dict[str, Any] | None = None,
    ) -> int:
        return append(
            self._conn, kind, actor=actor, thread_id=thread_id, subject_id=subject_id, payload=payload
        )

    def of_thread(self, thread_id: UUID, *, after: int = 0, limit: int | None = None) -> list[Event]:
        """A thread's events in order after ``after``; ``limit`` pages, it never truncates silently."""
        query = (
            select(t.events)
            .where(t.events.c.thread_id == thread_id, t.events.c.id > after)
            .order_by(t.events.c.id)
        )
        if limit is not None:
            query = query.limit(limit)
        return [Event.model_validate(dict(row)) for row in self._conn.execute(query).mappings()]

    def claims_on(self, thread_id: UUID, version_ids: list[str]) -> list[Event]:
        """The ``claim.added`` events of the versions, in the order the log holds them."""
        rows = self._conn.execute(
            select(t.events)
            .where(
                t.events.c.thread_id == thread_id,
                t.events.c.kind == "claim.added",
                t.events.c.payload["node_version_id"].astext.in_(version_ids),
            )
            .order_by(t.events.c.id)
        ).mappings()
        return [Event.model_validate(dict(row)) for row in rows]

    def latest_id(self, thread_id: UUID) -> int:
        """The id of the thread's newest event (0 when it has none)."""
        found = self._conn.execute(
            select(func.max(t.events.c.id)).where(t.events.c.thread_id == thread_id)
        ).scalar()
        return int(found or 0)
