"""The committer's rows (``council/sql/committer.sql``), typed at the boundary: the documents
``council_evaluate_read_v1`` and ``council_evaluate_write_v1`` return (revision 0044), for
:mod:`council.ledger.committer`. Its write only stores what it read from rows whose text
was redacted when first written: not redacted again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict
from uuid import UUID

from council.domain.jsonvalue import JsonObject
from council.ledger.snapshots import OwnError, PairSums, SnapshotRead


class LiveConsolidation(TypedDict):
    """A node's live consolidation, read after its lock (JSON)."""

    id: str
    node_version_id: str
    snapshot_sha256: str
    reasons: list[JsonObject]


class Recorded(TypedDict):
    """A consolidation, or an evaluation written before chains (revision 0013), already
    recorded for a version, with its snapshot hash (JSON)."""

    id: str
    snapshot_sha256: str | None
    reasons: list[JsonObject] | None


class TailRead(TypedDict):
    """The tail of a version's evaluation chain (``council_evaluation_tail_v2``): its id,
    seq, digest (hex; compact rows), whether it is compact, its snapshot hash and reasons."""

    id: str
    seq: int
    digest: str | None
    compact: bool
    snapshot_sha256: str | None
    reasons: list[JsonObject] | None


class DecidedRead(SnapshotRead):
    """A version the round decides: what its snapshot is built from, what is recorded for
    it (idempotency) and its chain's tail."""

    consolidations: list[Recorded]
    unchained: list[Recorded]
    tail: TailRead | None


class VersionRead(TypedDict):
    """A version of the batch under its node lock (``locked`` false: a shared lock, held
    only to answer a repeat) with its node's live consolidation."""

    id: str
    logical_node_id: str
    thread_id: str
    content: str
    locked: bool
    live: LiveConsolidation | None


class EvaluationRead(TypedDict):
    """The document ``council_evaluate_read_v1`` returns."""

    isolation: str
    versions: list[VersionRead]
    decided: list[DecidedRead] | None
    error_sums: list[PairSums]
    own_errors: list[OwnError]


class NotReadyWritten(TypedDict):
    version_id: str
    evaluation_id: str


class CommittedWritten(TypedDict):
    version_id: str
    consolidation_id: str
    memory_item_id: str


class EvaluationWritten(TypedDict):
    """The document ``council_evaluate_write_v1`` returns (None: nothing of that kind)."""

    not_ready: list[NotReadyWritten] | None
    committed: list[CommittedWritten] | None


@dataclass(frozen=True)
class Weight:
    id: UUID
    claims: int


@dataclass(frozen=True)
class BatchVersion:
    """A version of the batch as the read found it (``locked`` as ``VersionRead`` says)."""

    id: UUID
    logical_node_id: UUID
    thread_id: UUID
    content: str
    locked: bool
    live: LiveConsolidation | None

    @classmethod
    def of(cls, row: VersionRead) -> BatchVersion:
        """The version as ``council_evaluate_read_v1`` returned it (ids as text)."""
        ids = UUID(row["id"]), UUID(row["logical_node_id"]), UUID(row["thread_id"])
        return cls(*ids, row["content"], row["locked"], row["live"])
