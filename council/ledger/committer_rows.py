"""The committer's rows (``council/sql/committer.sql``), typed at the boundary: what each of
its statements returns, for :mod:`council.ledger.committer`. Its statements only write what
they read from rows whose text was redacted when first written: not redacted again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict
from uuid import UUID

from council.domain.jsonvalue import JsonObject


class LiveConsolidation(TypedDict):
    """A node's live consolidation as ``council_live_consolidation_v1`` gives it (JSON)."""

    id: str
    node_version_id: str
    snapshot_sha256: str
    reasons: list[JsonObject]


class StoredOutcome(TypedDict):
    """A consolidation or evaluation already recorded for a snapshot (JSON)."""

    id: str
    reasons: list[JsonObject]


@dataclass(frozen=True)
class Weight:
    id: UUID
    claims: int


@dataclass(frozen=True)
class Begun:
    """A version of the batch under its node lock (``commit_begin``); a lone row of
    NULLs but ``isolation`` when none was found."""

    isolation: str
    id: UUID | None
    logical_node_id: UUID
    thread_id: UUID
    content: str
    locked: bool | None
    live: LiveConsolidation | None


@dataclass(frozen=True)
class BatchVersion:
    """A version of the batch that ``commit_begin`` found (``locked`` as it says)."""

    id: UUID
    logical_node_id: UUID
    thread_id: UUID
    content: str
    locked: bool | None
    live: LiveConsolidation | None


@dataclass(frozen=True)
class LiveAndLocked:
    """Each node's live consolidation by logical node id, and the evidence now share-locked."""

    live: dict[str, LiveConsolidation]
    locked: list[str]


@dataclass(frozen=True)
class Decided:
    version_id: UUID
    consolidation: StoredOutcome | None
    evaluation: StoredOutcome | None


@dataclass(frozen=True)
class NotReady:
    version_id: UUID
    evaluation_id: UUID


@dataclass(frozen=True)
class Written:
    version_id: UUID
    consolidation_id: UUID
    memory_item_id: UUID


@dataclass(frozen=True)
class MemoryState:
    id: UUID
    status: str
