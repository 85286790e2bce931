"""The append-only event log (invariant 10): written in the same transaction as
the change it describes, never trimmed. Each row records its inserting
transaction (``tx``, revision 0015), by which live readers tail it exactly
(:mod:`council.domain.tail`); nothing is notified from the writer's transaction.
Named SQL: council/sql/event_log.sql and council/sql/events.sql."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from uuid import UUID

from council.domain.results.events import Event
from council.domain.tail import Settled, TailCursor, TailPage
from council.ledger.pg import Connection, Row, column, fetch, fetch_one


def append(
    conn: Connection,
    kind: str,
    *,
    actor: str,
    thread_id: UUID | None = None,
    subject_id: UUID | str | None = None,
    payload: Mapping[str, object] | None = None,
) -> int:
    """One event, in the caller's transaction (every store writes its events so)."""
    [event_id] = column(
        conn,
        "append_event",
        int,
        kind=kind,
        actor=actor,
        thread_id=thread_id,
        subject_id=str(subject_id) if subject_id is not None else None,
        payload=json.dumps(payload or {}),
    )
    return event_id


def append_many(
    conn: Connection,
    kind: str,
    *,
    actor: str,
    thread_id: UUID | None,
    items: Sequence[tuple[UUID | str, Mapping[str, object]]],
) -> list[int]:
    """Events of one kind, one per (subject, payload), in one statement and in order."""
    if not items:
        return []
    rows = [{"subject_id": str(subject), "payload": payload} for subject, payload in items]
    found = column(
        conn, "append_events", int, kind=kind, actor=actor, thread_id=thread_id, items=json.dumps(rows)
    )
    return sorted(found)  # taken from the identity in the array's order


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
        payload: Mapping[str, object] | None = None,
    ) -> int:
        return append(
            self._conn, kind, actor=actor, thread_id=thread_id, subject_id=subject_id, payload=payload
        )

    def of_thread(self, thread_id: UUID, *, after: int = 0, limit: int | None = None) -> list[Event]:
        """A thread's events in order after ``after``; ``limit`` pages, it never truncates silently."""
        return fetch(self._conn, "events_of_thread", Event, thread_id=thread_id, after=after, limit=limit)

    def claims_on(self, thread_id: UUID, version_ids: list[str]) -> list[Event]:
        """The ``claim.added`` events of the versions, in the order the log holds them."""
        return fetch(self._conn, "claim_events_on", Event, thread_id=thread_id, version_ids=list(version_ids))

    def tail(self, thread_id: UUID, cursor: TailCursor, *, limit: int) -> TailPage:
        """The thread's settled events after ``cursor``, at most ``limit`` (the skipped ones counted)."""
        rows = fetch(
            self._conn,
            "events_tail",
            Row,
            thread_id=thread_id,
            after_tx=str(cursor.tx),
            after_id=cursor.event_id,
            limit=limit,
        )
        events: list[Event] = []
        count = 0
        for row in rows:
            count += 1
            event = Event.model_validate(row)
            if event.id not in cursor.skip:
                events.append(event)
            cursor = cursor.past(int(str(row["tx"])), event.id)
        return TailPage(events=events, cursor=cursor, full=count == limit)

    def tail_now(self, thread_id: UUID) -> TailCursor:
        """A cursor for a reader that starts from now: only what is not yet visible will be sent."""
        [row] = fetch(self._conn, "events_tail_now", _Horizon, thread_id=thread_id)
        return TailCursor(int(row.tx), 0, frozenset(row.skip))

    def tail_after(self, event_id: int) -> TailCursor:
        """A cursor just after the event ``event_id`` (resuming a reader that has seen it)."""
        found = fetch_one(self._conn, "events_tail_after", _At, event_id=event_id)
        return TailCursor(int(found.tx), found.id) if found else TailCursor(0, 0)

    def settled_threads(self, since: int | None) -> Settled:
        """The threads with events settled since the horizon ``since`` (None: just the horizon)."""
        [row] = fetch(
            self._conn, "events_settled_threads", _Settled, since=None if since is None else str(since)
        )
        return Settled(horizon=int(row.horizon), thread_ids=frozenset(row.threads))


@dataclass(frozen=True, slots=True)
class _Horizon:
    tx: str
    skip: list[int]


@dataclass(frozen=True, slots=True)
class _At:
    tx: str
    id: int


@dataclass(frozen=True, slots=True)
class _Settled:
    horizon: str
    threads: list[UUID]
