"""Evidence: what `council evidence add | show` return."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from council.domain.results.base import Result, Row
from council.domain.results.history import Transition


class EvidenceAdded(Result):
    id: UUID
    sha256: str
    title: str
    thread_id: UUID
    new_content: bool
    already_in_thread: bool


class EvidenceThread(Row):
    thread_id: UUID
    title: str


class EvidenceShown(Row):
    id: UUID
    sha256: str
    title: str
    content: str | None
    source_kind: str
    source_uri: str | None
    media_type: str
    byte_size: int
    fetched_at: datetime | None
    validity: str
    validity_changed_at: datetime
    created_at: datetime
    threads: list[EvidenceThread]
    validity_history: list[Transition]
