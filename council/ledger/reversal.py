"""Governed reversal (DESIGN §5): evidence validity, materiality, memory status,
and the start of the bounded cascade (``council.ledger.cascade``).

A validity change takes the evidence key's exclusive lock, records the
transition and only then looks up the consolidations resting on it (through
the evidence index), so it either sees a concurrent commit or the commit sees
it. Work that needs node locks happens afterwards, never while the evidence
lock is held: the affected consolidations are reassessed in batches (two at
a time), one transaction per batch holding the node locks of that batch
(taken together, in ascending key order), with one read and set-based writes
per batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Engine, RowMapping, insert

from council.domain import materiality
from council.domain import validate as v
from council.errors import BadInput, NotFound
from council.ledger import cascade, events, memory, retraction
from council.ledger import tables as t
from council.ledger.db import unit_of_work
from council.ledger.locks import lock_evidence_exclusive
from council.ledger.lookup import require
from council.sql import query

MOVES = {
    "challenge": ({"valid", "reaffirmed"}, "challenged"),
    "invalidate": ({"valid", "reaffirmed", "challenged"}, "invalidated"),
    "reaffirm": ({"challenged"}, "reaffirmed"),
}
# Consolidations reassessed per transaction (their node locks held together),
# and transactions in flight at once: one batch is decided in Python while the
# other's statements run on the server.
REASSESS_BATCH = 100
REASSESS_WORKERS = 2

# Decides one consolidation of a reassessment batch; appends its memory moves.
Judge = Callable[[RowMapping, str, list[dict[str, Any]]], dict[str, Any]]


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
    cause = f"evidence {evidence_id} {target}"
    pinned: dict[UUID, tuple[str, str]] = {}
    frontier: list[UUID] = []
    batches = [affected[start : start + REASSESS_BATCH] for start in range(0, len(affected), REASSESS_BATCH)]
    with ThreadPoolExecutor(max_workers=REASSESS_WORKERS) as pool:
        done = pool.map(
            lambda batch: reassess(engine, batch, actor=actor, cause=cause, pinned=pinned, frontier=frontier),
            batches,
        )
        results = [result for batch in done for result in batch]
    with unit_of_work(engine) as conn:
        first_step = cascade.step(conn, frontier, actor=actor)
    return {
        "id": evidence_id,
        "validity": target,
        "affected": results,
        "proposals": [r["proposal_id"] for r in results if r.get("proposal_id")],
        "cascade": first_step,
    }


def reassess(
    engine: Engine,
    consolidations: Sequence[Mapping[str, Any]],
    *,
    actor: str,
    cause: str,
    pinned: dict[UUID, tuple[str, str]],
    judge: Judge | None = None,
    frontier: list[UUID] | None = None,
) -> list[dict[str, Any]]:
    """Project the current validity of each consolidation's evidence onto its
    memory item (``consolidations``: rows of ``affected_consolidations``);
    ``judge`` decides each one (default: :func:`_reassess_one`).

    One transaction under the node locks of the whole batch, taken in
    ascending key order (deadlock-free: it takes no other lock, and every
    other writer holds at most one node lock). Then one read, then one
    statement for the memory moves and one for the retraction proposals the
    material ones open. ``pinned`` caches, per thread, the rule set and
    grouping those proposals pin. With ``frontier``, the consolidations left
    contested start a cascade: its first continuation is recorded in this same
    transaction (so it outlives a crash or an outage right after) and its id
    appended to ``frontier``. Results in input order.
    """
    if not consolidations:
        return []
    ids = [str(c["id"]) for c in consolidations]
    by_key = sorted(consolidations, key=lambda c: int(c["node_lock_key"]))
    with unit_of_work(engine) as conn:
        # One lock_node per node in ascending key order, sent in one round trip.
        conn.execute(query("lock_node"), [{"logical_node_id": str(c["logical_node_id"])} for c in by_key])
        rows = {str(r["id"]): r for r in conn.execute(query("reassess_load"), {"ids": ids}).mappings()}
        moves: list[dict[str, Any]] = []
        results = []
        for consolidation_id in ids:
            if consolidation_id not in rows:
                raise NotFound(f"no consolidation with id {consolidation_id}")
            results.append((judge or _reassess_one)(rows[consolidation_id], cause, moves))
        memory.move_many(conn, moves, actor)
        material = [r for r in results if r["material"]]
        if material:
            reason = f"{cause}; the decision does not survive without it"
            _open_retractions(conn, material, rows, pinned, reason=reason, actor=actor)
        if frontier is not None:
            contested = [
                (str(r["node_version_id"]), cascade.CASCADE_DEPTH)
                for r in results
                if r["memory_status"] == "contested"
            ]
            started = cascade.begin(conn, contested, actor=actor)
            if started is not None:
                frontier.append(started)
    return results


def _reassess_one(row: RowMapping, cause: str, moves: list[dict[str, Any]]) -> dict[str, Any]:
    """One consolidation's verdict; its memory moves are appended to ``moves`` in order."""
    result = _verdict(row)
    status = row["memory_status"]

    def move(to: str, reason: str, details: dict[str, Any]) -> None:
        nonlocal status
        moves.append(memory.move(row["memory_item_id"], row["memory_thread_id"], status, to, reason, details))
        status = to

    if row["status"] != "live":
        return {**result, "memory_status": status}
    validity = row["validity"]
    invalidated = sorted(e for e, state in validity.items() if state == "invalidated")
    challenged = sorted(e for e, state in validity.items() if state == "challenged")
    if invalidated:
        material, after = materiality.check(row["snapshot"], invalidated)
        result["material"] = material
        details = {"removed": invalidated, "failed_without_them": [r.rule for r in after.failed()]}
        if material:
            move("contested", f"{cause}: material", details)
        else:
            if status == "stable":
                move("provisional", f"{cause}: checking materiality", details)
            target = "provisional" if challenged else "stable"
            move(target, f"{cause}: immaterial", {**details, "check": "immaterial"})
    elif challenged:
        if status == "stable":
            move("provisional", f"{cause}: support challenged", {"challenged": challenged})
    elif status == "provisional":
        move("stable", f"{cause}: support sound again", {})
    return {**result, "memory_status": status}


def reverify_challenged(
    engine: Engine, *, memory_item_ids: Sequence[UUID] | None = None, limit: int = 100, actor: str
) -> list[dict[str, Any]]:
    """Re-verify provisional memory whose support is challenged (DESIGN §5):
    evaluate its stored snapshot as if every challenged or invalidated item
    had fallen. If the decision holds, the memory is stable again with the
    check recorded; if not, it is contested and a retraction proposal opens,
    for review runs to vote on. ``memory_item_ids`` limits it to those items
    (a read that touched them); at most ``limit`` consolidations per call.
    Memory that is provisional only because it depends on a contested node
    waits for that node's adjudication."""
    v.count(memory_item_ids or [], "memory items", limit=10_000)
    with unit_of_work(engine) as conn:
        candidates = [
            dict(r)
            for r in conn.execute(
                query("provisional_challenged"),
                {
                    "memory_item_ids": [str(i) for i in memory_item_ids]
                    if memory_item_ids is not None
                    else None,
                    "limit": limit,
                },
            ).mappings()
        ]
    pinned: dict[UUID, tuple[str, str]] = {}
    cause = "re-verification of challenged support"
    return [
        result
        for start in range(0, len(candidates), REASSESS_BATCH)
        for result in reassess(
            engine,
            candidates[start : start + REASSESS_BATCH],
            actor=actor,
            cause=cause,
            pinned=pinned,
            judge=_reverify_one,
        )
    ]


def _reverify_one(row: RowMapping, cause: str, moves: list[dict[str, Any]]) -> dict[str, Any]:
    result = _verdict(row)
    challenged = sorted(e for e, state in row["validity"].items() if state == "challenged")
    if row["status"] != "live" or row["memory_status"] != "provisional" or not challenged:
        return result  # moved on since it was picked (a concurrent reassessment), or nothing to check
    invalidated = sorted(e for e, state in row["validity"].items() if state == "invalidated")
    material, after = materiality.check(row["snapshot"], [*invalidated, *challenged])
    target = "contested" if material else "stable"
    details = {
        "removed": [*invalidated, *challenged],
        "challenged": challenged,
        "failed_without_them": [r.rule for r in after.failed()],
        "check": "material" if material else "immaterial",
    }
    moves.append(
        memory.move(
            row["memory_item_id"],
            row["memory_thread_id"],
            "provisional",
            target,
            f"{cause}: {details['check']}",
            details,
        )
    )
    return {**result, "material": material, "memory_status": target}


def _verdict(row: RowMapping) -> dict[str, Any]:
    return {
        "consolidation_id": row["id"],
        "node_version_id": row["node_version_id"],
        "memory_item_id": row["memory_item_id"],
        "material": None,
        "proposal_id": None,
        "memory_status": row["memory_status"],
    }


def _open_retractions(
    conn: Connection,
    results: Sequence[dict[str, Any]],
    rows: Mapping[str, RowMapping],
    pinned: dict[UUID, tuple[str, str]],
    *,
    reason: str,
    actor: str,
) -> None:
    """Open (or find the open) retraction proposal of each result's
    consolidation, pinned to the versions in force for its thread (as
    a proposal opened by hand is), and set each result's ``proposal_id``."""
    thread_of = {r["consolidation_id"]: rows[str(r["consolidation_id"])]["thread_id"] for r in results}
    for thread in set(thread_of.values()) - pinned.keys():
        pinned[thread] = retraction.default_versions(conn, {"thread_id": thread})
    opened = retraction.open_many(
        conn,
        [(consolidation_id, thread, pinned[thread]) for consolidation_id, thread in thread_of.items()],
        reason=reason,
        actor=actor,
    )
    for r in results:
        r["proposal_id"] = opened[str(r["consolidation_id"])]
