"""The event log as `council events` and `GET /threads/{id}/events` return it."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import Field

from council.domain.results.base import Document, Result, Row
from council.domain.results.consolidation import GroupShape


class Event(Row):
    id: int
    thread_id: UUID | None
    kind: str
    subject_id: str | None
    actor: str
    payload: Document
    created_at: datetime


class EventList(Result):
    items: list[Event]


class FormationLink(Result):
    """A link by which the claiming run joined a group of earlier runs: ``kind`` is
    parent, exposure, similar_input or shared_evidence."""

    kind: str
    run_id: str
    agent: str


class FormationStep(Result):
    """One claim, and the node version's groups as they were at that claim
    (computed from the stored records of the runs that had claimed by then)."""

    event_id: int
    claim_id: str
    node_version_id: str
    run_id: str
    agent: str
    provider: str
    stance: str
    confidence: float
    groups: list[GroupShape]
    links: list[FormationLink]
    run_agents: dict[str, str]  # the agent of each run in the groups


class SkippedEvent(Result):
    """An event a reader of the log passed over: its payload does not fit its kind
    (written before the database checked it, council/domain/event_shapes.py)."""

    event_id: int
    kind: str
    reason: str


class Formation(Result):
    """How groups formed on a thread's node versions, claim by claim; ``skipped``: the
    malformed claim events left out."""

    thread_id: UUID
    steps: list[FormationStep]
    skipped: list[SkippedEvent] = Field(default_factory=list)


class Watched(Result):
    """What `council watch` saw: the events, and at each claim the groups of its
    node as they were then (``steps``); ``groups`` is the last of them per version;
    ``skipped``: the malformed claim events it passed over."""

    thread_id: UUID
    events: list[Event]
    steps: list[FormationStep]
    groups: dict[str, list[GroupShape]]
    skipped: list[SkippedEvent] = Field(default_factory=list)
