"""Governed reversal (DESIGN §5): evidence validity, materiality, memory status
and the bounded cascade.

A validity change takes the evidence key's exclusive lock, records the
transition and only then looks up the consolidations resting on it (through
the evidence index), so it either sees a concurrent commit or the commit sees
it. Work that needs node locks happens afterwards, one transaction per
consolidation, never while the evidence lock is held.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Engine, insert, select

from council.domain import materiality
from council.domain import validate as v
from council.errors import BadInput
from council.ledger import events, retraction
from council.ledger import tables as t
from council.ledger.db import unit_of_work
from council.ledger.locks import lock_evidence_exclusive, lock_node
from council.ledger.lookup import require
from council.ledger.memory import move_memory
from council.sql import query

MOVES = {
    "challenge": ({"valid", "reaffirmed"}, "challenged"),
    "invalidate": ({"valid", "reaffirmed", "challenged"}, "invalidated"),
    "reaffirm": ({"challenged"}, "reaffirmed"),
}
CASCADE_DEPTH = 3
CASCADE_STEP_LIMIT = 200


def change_validity(
    engine: Engine, evidence_id: UUID, *, action: str, reason: str, actor: str
) -> dict[str, Any]:
    """Challenge, invalidate or reaffirm evidence, then reassess what rests on it."""
    v.choice(action, "action", MOVES)
    reason = v.text(reason, "reason", v.MAX_REASON)
    allowed, target = MOVES[action]
    with unit_of_work(engine) as conn:
        lock_evidence_exclusive(conn, evidence_id)
        row = require(conn, t.evidence, evidence_id, "evidence")
        if row["validity"] not in allowed:
            raise BadInput(f"cannot {action} evidence that is {row['validity']}")
        conn.execute(
            insert(t.evidence_transitions).values(
                evidence_id=evidence_id,
                from_status=row["validity"],
                to_status=target,
                reason=reason,
                actor=actor,
            )
        )
        affected = [
            dict(r)
            for r in conn.execute(query("affected_consolidations"), {"evidence_id": evidence_id}).mappings()
        ]
        threads = sorted({r["thread_id"] for r in affected}, key=str) or [None]
        for thread_id in threads:
            events.append(
                conn,
                f"evidence.{target}",
                actor=actor,
                thread_id=thread_id,
                subject_id=evidence_id,
                payload={"from": row["validity"], "reason": reason, "affected": len(affected)},
            )
    results = [
        reassess(engine, r["id"], actor=actor, cause=f"evidence {evidence_id} {target}") for r in affected
    ]
    contested = [
        (UUID(str(r["node_version_id"])), CASCADE_DEPTH) for r in results if r["memory_status"] == "contested"
    ]
    cascade = cascade_step(engine, contested, actor=actor)
    return {
        "id": evidence_id,
        "validity": target,
        "affected": results,
        "proposals": [r["proposal_id"] for r in results if r.get("proposal_id")],
        "cascade": cascade,
    }


def reassess(engine: Engine, consolidation_id: UUID, *, actor: str, cause: str) -> dict[str, Any]:
    """Project the current validity of a consolidation's evidence onto its memory item."""
    with unit_of_work(engine) as conn:
        head = require(conn, t.consolidations, consolidation_id, "consolidation")
        lock_node(conn, head["logical_node_id"])
        consolidation = (
            conn.execute(select(t.consolidations).where(t.consolidations.c.id == consolidation_id))
            .mappings()
            .one()
        )
        memory = dict(
            conn.execute(select(t.memory_items).where(t.memory_items.c.consolidation_id == consolidation_id))
            .mappings()
            .one()
        )
        result: dict[str, Any] = {
            "consolidation_id": consolidation_id,
            "node_version_id": consolidation["node_version_id"],
            "memory_item_id": memory["id"],
            "material": None,
            "proposal_id": None,
        }
        if consolidation["status"] != "live":
            return {**result, "memory_status": memory["status"]}
        snapshot = consolidation["snapshot"]
        ids = [e["id"] for e in snapshot["evidence"]]
        validity = {str(r.id): r.validity for r in conn.execute(query("evidence_validity"), {"ids": ids})}
        invalidated = sorted(e for e, state in validity.items() if state == "invalidated")
        challenged = sorted(e for e, state in validity.items() if state == "challenged")
        status = memory["status"]
        if invalidated:
            material, after = materiality.check(snapshot, invalidated)
            result["material"] = material
            details = {"removed": invalidated, "failed_without_them": [r.rule for r in after.failed()]}
            if material:
                status = move_memory(conn, memory, "contested", f"{cause}: material", actor, details)
                result["proposal_id"] = retraction.open_in(
                    conn,
                    consolidation,
                    reason=f"{cause}; the decision does not survive without it",
                    actor=actor,
                )
            else:
                if status == "stable":
                    status = move_memory(
                        conn, memory, "provisional", f"{cause}: checking materiality", actor, details
                    )
                target = "provisional" if challenged else "stable"
                status = move_memory(
                    conn, memory, target, f"{cause}: immaterial", actor, {**details, "check": "immaterial"}
                )
        elif challenged:
            if status == "stable":
                status = move_memory(
                    conn,
                    memory,
                    "provisional",
                    f"{cause}: support challenged",
                    actor,
                    {"challenged": challenged},
                )
        elif status == "provisional":
            status = move_memory(conn, memory, "stable", f"{cause}: support sound again", actor, {})
        return {**result, "memory_status": status}


def cascade_step(engine: Engine, pending: Sequence[tuple[UUID, int]], *, actor: str) -> dict[str, Any]:
    """One bounded step of the cascade: expand ``pending`` (version, depth left)
    breadth first, marking the memory of every node that depends on them
    provisional, until CASCADE_STEP_LIMIT dependents were reached in this step.
    What is left is returned as the continuation — bounded, never lossy. (A
    single version with more dependents than the limit is expanded alone.)"""
    queue = [(str(version), depth) for version, depth in pending if depth > 0]
    reached = marked = 0
    seen = {version for version, _ in queue}
    with unit_of_work(engine) as conn:
        while queue:
            version, depth = queue[0]
            rows = list(conn.execute(query("dependents"), {"versions": [version]}).mappings())
            if reached and reached + len(rows) > CASCADE_STEP_LIMIT:
                break
            queue.pop(0)
            for row in rows:
                dependent = str(row["version_id"])
                reached += 1
                if row["memory_item_id"] is not None and row["memory_status"] == "stable":
                    memory = {"id": row["memory_item_id"], "status": "stable", "thread_id": row["thread_id"]}
                    move_memory(
                        conn,
                        memory,
                        "provisional",
                        f"depends on contested {version}",
                        actor,
                        {"via": version},
                    )
                    marked += 1
                if depth > 1 and dependent not in seen:
                    seen.add(dependent)
                    queue.append((dependent, depth - 1))
    return {
        "reached": reached,
        "marked_provisional": marked,
        "continuation": [(UUID(version), depth) for version, depth in queue],
        "continuation_queued": False,
    }
