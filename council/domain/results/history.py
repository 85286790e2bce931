"""A status change as every transition table records it."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from council.domain.results.base import Document, Row


class Transition(Row):
    id: UUID
    from_status: str
    to_status: str
    reason: str
    actor: str
    created_at: datetime


class DetailedTransition(Transition):
    details: Document
