"""Reading consolidation state: a version's current snapshot, consolidations,
recorded evaluations and memory items (the writes are the committer's and the
reversal's)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, select

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
from council.ledger import tables as t
from council.ledger.lookup import require
from council.ledger.snapshots import current_snapshot, snapshot_from_manifest, snapshots_from_manifests
from council.sql import query


class Consolidations:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def current_snapshot(self, version_id: UUID) -> Snapshot:
        """What a decision on the version would read now (no locks taken)."""
        require(self._conn, t.node_versions, version_id, "node version")
        return current_snapshot(self._conn, version_id)

    def history(self, version_id: UUID) -> History:
        """Every consolidation and recorded evaluation of the version's logical node."""
        conn = self._conn
        node_id = require(conn, t.node_versions, version_id, "node version")["logical_node_id"]
        consolidations = [
            RecordedConsolidation.model_validate({**r, "reasons": r["decision"]["reasons"]})
            for r in conn.execute(
                select(t.consolidations)
                .where(t.consolidations.c.logical_node_id == node_id)
                .order_by(t.consolidations.c.created_at)
            ).mappings()
        ]
        rows = conn.execute(query("evaluation_history"), {"logical_node_id": node_id}).mappings()
        evaluations = [RecordedEvaluation.model_validate(dict(r)) for r in rows]
        return History(logical_node_id=node_id, consolidations=consolidations, evaluations=evaluations)

    def show(self, consolidation_id: UUID) -> ConsolidationShown:
        """One consolidation as stored (snapshot, hash, decision), with its status
        history, the evidence it rests on and the memory item it projected."""
        conn = self._conn
        row = dict(require(conn, t.consolidations, consolidation_id, "consolidation"))
        history = conn.execute(
            select(t.consolidation_transitions)
            .where(t.consolidation_transitions.c.consolidation_id == consolidation_id)
            .order_by(t.consolidation_transitions.c.created_at)
        ).mappings()
        evidence_ids = conn.execute(
            select(t.consolidation_evidence.c.evidence_id)
            .where(t.consolidation_evidence.c.consolidation_id == consolidation_id)
            .order_by(t.consolidation_evidence.c.evidence_id)
        ).scalars()
        memory = (
            conn.execute(
                select(t.memory_items.c.id, t.memory_items.c.status).where(
                    t.memory_items.c.consolidation_id == consolidation_id
                )
            )
            .mappings()
            .first()
        )
        return ConsolidationShown.model_validate(
            {
                **row,
                "history": [dict(r) for r in history],
                "evidence_ids": list(evidence_ids),
                "memory": dict(memory) if memory is not None else None,
            }
        )

    def record(self, record_id: UUID) -> tuple[str, dict[str, Any]]:
        """A stored decision by id: ("consolidation" | "evaluation", its row). An
        evaluation's ``manifest``, ``section_sha256`` and ``reasons`` are filled in
        from its chain and its stored reasons (revision 0013), and the columns a
        compact row leaves out from its version and its root (revision 0014)."""
        for kind, table in (("consolidation", t.consolidations), ("evaluation", t.consolidation_evaluations)):
            row = self._conn.execute(select(table).where(table.c.id == record_id)).mappings().first()
            if row is None:
                continue
            found = dict(row)
            if kind == "evaluation":
                # Its columns as resolved for any layout (revision 0014), its manifest from its chain.
                found.update(
                    self._conn.execute(query("evaluation_record"), {"id": record_id}).mappings().one()
                )
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
            row.id: manifest_of(row.snapshot)
            for row in self._conn.execute(
                select(t.consolidations.c.id, t.consolidations.c.snapshot).where(
                    t.consolidations.c.id.in_(ids)
                )
            )
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
        rows = self._conn.execute(query("stored_decisions"), {"thread_id": thread_id, "since": since})
        return [
            (
                row.thread_id,
                StoredDecision(
                    str(row.id), row.kind, str(row.node_version_id), row.outcome, row.snapshot_sha256
                ),
            )
            for row in rows
        ]

    def memory(self, *, status: str | None = None, thread_id: UUID | None = None) -> list[MemoryItem]:
        """Memory items (oldest first) with their whole transition history."""
        conn = self._conn
        query = select(t.memory_items).order_by(t.memory_items.c.created_at, t.memory_items.c.id)
        if status is not None:
            query = query.where(t.memory_items.c.status == status)
        if thread_id is not None:
            query = query.where(t.memory_items.c.thread_id == thread_id)
        items = [dict(r) for r in conn.execute(query).mappings()]
        history: dict[Any, list[dict[str, Any]]] = {item["id"]: [] for item in items}
        if history:
            rows = conn.execute(
                select(t.memory_transitions)
                .where(t.memory_transitions.c.memory_item_id.in_(list(history)))
                .order_by(t.memory_transitions.c.created_at)
            ).mappings()
            for row in rows:
                history[row["memory_item_id"]].append(dict(row))
        return [MemoryItem.model_validate({**item, "history": history[item["id"]]}) for item in items]
