"""The event log as `council events` and `GET /threads/{id}/events` return it."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from council.domain.results.base import Result, Row


class Event(Row):
    id: int
    thread_id: UUID | None
    kind: str
    subject_id: str | None
    actor: str
    payload: dict[str, Any]
    created_at: datetime


class EventList(Result):
    items: list[Event]


class Watched(Result):
    """What `council watch` saw: the events, and after each claim the groups of its node."""

    thread_id: UUID
    events: list[Event]
    groups: dict[str, Any]
