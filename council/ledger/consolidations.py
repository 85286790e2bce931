"""Reading consolidation state: a version's current snapshot, consolidations,
recorded evaluations and memory items (the writes are the committer's and the
reversal's)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict
from uuid import UUID

from council.domain.counterfactual import StoredDecision
from council.domain.manifests import Manifest
from council.domain.results.consolidation import (
    ConsolidationShown,
    History,
    MemoryItem,
    RecordedConsolidation,
    RecordedEvaluation,
)
from council.domain.snapshot import Snapshot, manifest_of
from council.errors import NotFound
from council.ledger import evaluation_chains
from council.ledger.lookup import require, require_row
from council.ledger.nodes import VersionRow
from council.ledger.pg import column, fetch, fetch_one
from council.ledger.snapshots import current_snapshot, snapshot_from_manifest, snapshots_from_manifests

if TYPE_CHECKING:  # the snapshot and evaluation-chain readers take it until they run named SQL
    from council.ledger.pg import Connection


class ConsolidationRow(TypedDict):
    id: UUID
    thread_id: UUID
    logical_node_id: UUID
    node_version_id: UUID
    rule_set_id: str
    grouping_algorithm_id: str
    snapshot: dict[str, object]
    snapshot_sha256: str
    decision: dict[str, object]
    status: str
    status_changed_at: datetime
    created_at: datetime


class _TransitionRow(TypedDict):
    id: UUID
    consolidation_id: UUID
    from_status: str
    to_status: str
    reason: str
    actor: str
    created_at: datetime


class _MemoryRef(TypedDict):
    id: UUID
    status: str


class _SnapshotRow(TypedDict):
    id: UUID
    snapshot: Snapshot


class _EvaluationRow(TypedDict):
    id: UUID
    node_version_id: UUID
    outcome: str
    snapshot_sha256: str
    created_at: datetime
    reasons: list[dict[str, object]]


class _StoredRow(TypedDict):
    id: UUID
    kind: str
    thread_id: UUID
    node_version_id: UUID
    outcome: str
    snapshot_sha256: str
    created_at: datetime


class _MemoryItemRow(TypedDict):
    id: UUID
    thread_id: UUID
    consolidation_id: UUID
    logical_node_id: UUID
    node_version_id: UUID
    content: str
    status: str
    status_changed_at: datetime
    created_at: datetime


class _MemoryTransitionRow(TypedDict):
    id: UUID
    memory_item_id: UUID
    from_status: str
    to_status: str
    reason: str
    actor: str
    details: dict[str, object]
    created_at: datetime


class Consolidations:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def current_snapshot(self, version_id: UUID) -> Snapshot:
        """What a decision on the version would read now (no locks taken)."""
        require(self._conn, "node_versions", version_id, "node version")
        return current_snapshot(self._conn, version_id)

    def history(self, version_id: UUID) -> History:
        """Every consolidation and recorded evaluation of the version's logical node."""
        conn = self._conn
        version = require_row(conn, "node_versions", VersionRow, version_id, "node version")
        node_id = version["logical_node_id"]
        consolidations = [
            RecordedConsolidation.model_validate({**r, "reasons": r["decision"]["reasons"]})
            for r in fetch(conn, "node_consolidations", ConsolidationRow, logical_node_id=node_id)
        ]
        evaluations = [
            RecordedEvaluation.model_validate(r)
            for r in fetch(conn, "evaluation_history", _EvaluationRow, logical_node_id=node_id)
        ]
        return History(logical_node_id=node_id, consolidations=consolidations, evaluations=evaluations)

    def show(self, consolidation_id: UUID) -> ConsolidationShown:
        """One consolidation as stored (snapshot, hash, decision), with its status
        history, the evidence it rests on and the memory item it projected."""
        conn = self._conn
        row = fetch_one(conn, "consolidation_row", ConsolidationRow, id=consolidation_id)
        if row is None:
            raise NotFound(f"no consolidation with id {consolidation_id}")
        return ConsolidationShown.model_validate(
            {
                **row,
                "history": fetch(
                    conn, "consolidation_transitions_of", _TransitionRow, consolidation_id=consolidation_id
                ),
                "evidence_ids": column(
                    conn, "consolidation_evidence_ids", UUID, consolidation_id=consolidation_id
                ),
                "memory": fetch_one(
                    conn, "consolidation_memory", _MemoryRef, consolidation_id=consolidation_id
                ),
            }
        )

    def record(self, record_id: UUID) -> tuple[str, dict[str, Any]]:
        """A stored decision by id: ("consolidation" | "evaluation", its row). An
        evaluation's ``manifest``, ``section_sha256`` and ``reasons`` are filled in
        from its chain and its stored reasons (revision 0013), and the columns a
        compact row leaves out from its version and its root (revision 0014)."""
        for kind, name in (("consolidation", "consolidation_row"), ("evaluation", "evaluation_row")):
            row = fetch_one(self._conn, name, dict[str, object], id=record_id)
            if row is None:
                continue
            found = dict(row)
            if kind == "evaluation":
                # Its columns as resolved for any layout (revision 0014), its manifest from its chain.
                [resolved] = fetch(self._conn, "evaluation_record", dict[str, object], id=record_id)
                found.update(resolved)
                rebuilt = evaluation_chains.stored(self._conn, [record_id])[record_id]
                found["manifest"], found["section_sha256"] = rebuilt.manifest, rebuilt.sections
            return kind, found
        raise NotFound(f"no consolidation or evaluation with id {record_id}")

    def manifests(self, record_ids: Sequence[UUID]) -> dict[UUID, Manifest]:
        """The full manifest of each consolidation or evaluation of ``record_ids``
        (unknown ids are absent): a consolidation's from its snapshot, an
        evaluation's rebuilt from its chain — two statements for any number."""
        ids = list(record_ids)
        if not ids:
            return {}
        found = {
            row["id"]: manifest_of(row["snapshot"])
            for row in fetch(self._conn, "consolidation_snapshots", _SnapshotRow, ids=ids)
        }
        rest = [i for i in ids if i not in found]
        found.update({i: s.manifest for i, s in evaluation_chains.stored(self._conn, rest).items()})
        return found

    def rebuild(self, manifest: Manifest) -> Snapshot:
        """The snapshot a manifest names, re-read row by row from the ledger."""
        return snapshot_from_manifest(self._conn, manifest)

    def rebuild_many(self, manifests: Sequence[Manifest]) -> list[Snapshot]:
        """The snapshot each manifest names, in order, from one statement for all."""
        return snapshots_from_manifests(self._conn, manifests)

    def stored_decisions(
        self, *, thread_id: UUID | None = None, since: datetime | None = None
    ) -> list[tuple[UUID, StoredDecision]]:
        """Every stored decision (consolidations and not-ready evaluations), with its
        thread, in recording order; of one thread and recorded at or after ``since``
        when given."""
        rows = fetch(self._conn, "stored_decisions", _StoredRow, thread_id=thread_id, since=since)
        return [
            (
                row["thread_id"],
                StoredDecision(
                    str(row["id"]),
                    row["kind"],
                    str(row["node_version_id"]),
                    row["outcome"],
                    row["snapshot_sha256"],
                ),
            )
            for row in rows
        ]

    def memory(self, *, status: str | None = None, thread_id: UUID | None = None) -> list[MemoryItem]:
        """Memory items (oldest first) with their whole transition history."""
        conn = self._conn
        items = fetch(conn, "memory_items_listed", _MemoryItemRow, status=status, thread_id=thread_id)
        history: dict[UUID, list[_MemoryTransitionRow]] = {item["id"]: [] for item in items}
        if history:
            for row in fetch(conn, "memory_transitions_of", _MemoryTransitionRow, ids=list(history)):
                history[row["memory_item_id"]].append(row)
        return [MemoryItem.model_validate({**item, "history": history[item["id"]]}) for item in items]
