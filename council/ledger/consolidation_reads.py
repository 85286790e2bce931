"""Reading consolidation state: groups, memory, and a node's decision history."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Engine, select

from council.domain.rules import group_dict, groups_of
from council.domain.validate import choice
from council.domain.vocabulary import MEMORY_STATUSES
from council.ledger import tables as t
from council.ledger.db import unit_of_work
from council.ledger.lookup import require
from council.ledger.snapshots import current_snapshot


def groups(engine: Engine, version_id: UUID) -> dict[str, Any]:
    """The independence groups of a node version's claiming runs, as of now."""
    with unit_of_work(engine) as conn:
        require(conn, t.node_versions, version_id, "node version")
        snapshot = current_snapshot(conn, version_id)
    found = groups_of(snapshot)
    providers = {r["id"]: r["provider"] for r in snapshot["runs"]}
    return {
        "node_version_id": version_id,
        "grouping_algorithm_id": snapshot["grouping"]["id"],
        "claims": len(snapshot["claims"]),
        "groups": [{**group_dict(g), "run_providers": {r: providers[r] for r in g.runs}} for g in found],
        "support_groups": sum(1 for g in found if g.kind == "support"),
        "dispute_groups": sum(1 for g in found if g.kind == "dispute"),
    }


def memory_list(
    engine: Engine, *, status: str | None = None, thread_id: UUID | None = None
) -> dict[str, Any]:
    if status is not None:
        choice(status, "memory status", MEMORY_STATUSES)
    with unit_of_work(engine) as conn:
        if thread_id is not None:
            require(conn, t.threads, thread_id, "thread")
        query = select(t.memory_items).order_by(t.memory_items.c.created_at, t.memory_items.c.id)
        if status is not None:
            query = query.where(t.memory_items.c.status == status)
        if thread_id is not None:
            query = query.where(t.memory_items.c.thread_id == thread_id)
        items = [dict(r) for r in conn.execute(query).mappings()]
        ids = [item["id"] for item in items]
        history: dict[Any, list[dict[str, Any]]] = {i: [] for i in ids}
        if ids:
            rows = conn.execute(
                select(t.memory_transitions)
                .where(t.memory_transitions.c.memory_item_id.in_(ids))
                .order_by(t.memory_transitions.c.created_at)
            ).mappings()
            for row in rows:
                history[row["memory_item_id"]].append(dict(row))
    for item in items:
        item["history"] = history[item["id"]]
    return {"items": items, "status": status}


def history(engine: Engine, version_id: UUID) -> dict[str, Any]:
    """Every consolidation and recorded evaluation of the version's logical node."""
    with unit_of_work(engine) as conn:
        version = require(conn, t.node_versions, version_id, "node version")
        node_id = version["logical_node_id"]
        consolidations = [
            {
                "id": r["id"],
                "node_version_id": r["node_version_id"],
                "status": r["status"],
                "snapshot_sha256": r["snapshot_sha256"],
                "reasons": r["decision"]["reasons"],
                "created_at": r["created_at"],
            }
            for r in conn.execute(
                select(t.consolidations)
                .where(t.consolidations.c.logical_node_id == node_id)
                .order_by(t.consolidations.c.created_at)
            ).mappings()
        ]
        evaluations = [
            {
                "id": r["id"],
                "node_version_id": r["node_version_id"],
                "outcome": r["outcome"],
                "snapshot_sha256": r["snapshot_sha256"],
                "reasons": r["reasons"],
                "created_at": r["created_at"],
            }
            for r in conn.execute(
                select(t.consolidation_evaluations)
                .where(t.consolidation_evaluations.c.logical_node_id == node_id)
                .order_by(t.consolidation_evaluations.c.created_at)
            ).mappings()
        ]
    return {"logical_node_id": node_id, "consolidations": consolidations, "evaluations": evaluations}


def show_consolidation(engine: Engine, consolidation_id: UUID) -> dict[str, Any]:
    """One consolidation as stored (snapshot, hash, decision), with its status
    history, the evidence it rests on and the memory item it projected."""
    with unit_of_work(engine) as conn:
        consolidation = dict(require(conn, t.consolidations, consolidation_id, "consolidation"))
        consolidation["history"] = [
            dict(r)
            for r in conn.execute(
                select(t.consolidation_transitions)
                .where(t.consolidation_transitions.c.consolidation_id == consolidation_id)
                .order_by(t.consolidation_transitions.c.created_at)
            ).mappings()
        ]
        consolidation["evidence_ids"] = list(
            conn.execute(
                select(t.consolidation_evidence.c.evidence_id)
                .where(t.consolidation_evidence.c.consolidation_id == consolidation_id)
                .order_by(t.consolidation_evidence.c.evidence_id)
            ).scalars()
        )
        memory = (
            conn.execute(
                select(t.memory_items.c.id, t.memory_items.c.status).where(
                    t.memory_items.c.consolidation_id == consolidation_id
                )
            )
            .mappings()
            .first()
        )
        consolidation["memory"] = dict(memory) if memory is not None else None
    return consolidation
