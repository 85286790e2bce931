"""Governed reversal's reads and writes (docs/architecture.md §5): evidence validity
transitions, and the reassessment of consolidations resting on evidence.

A validity change takes the evidence key's exclusive lock, records the
transition and only then looks up the consolidations resting on it (through
the evidence index), so it either sees a concurrent commit or the commit sees
it. Reassessment needs node locks, so it happens in later transactions, never
while the evidence lock is held (the service batches and parallelises them):
one transaction per batch holding the node locks of that batch, taken together
in ascending key order, then one read and set-based writes. What a batch
decides comes from a pure judge (``council.domain.reassessment``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict
from uuid import UUID

from council.domain import validate as v
from council.domain.reassessment import Loaded, Moves, Verdict
from council.domain.vocabulary import VALIDITY_ACTIONS
from council.errors import BadInput, NotFound
from council.ledger import cascade, events, memory, retraction
from council.ledger.commit_rows import AffectedConsolidation
from council.ledger.locks import lock_evidence_exclusive
from council.ledger.lookup import require_row
from council.ledger.pg import Connection, execute, execute_many, fetch
from council.ledger.retraction import Pins

if TYPE_CHECKING:  # cascade takes it until it runs on psycopg alone
    from council.ledger.pg import Connection

# Decides one consolidation of a reassessment batch; appends its memory moves.
Judge = Callable[[Loaded, str, Moves], Verdict]


class _Validity(TypedDict):
    validity: str


class Reversal:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def change_validity(
        self, evidence_id: UUID, *, action: str, reason: str, actor: str
    ) -> tuple[str, list[AffectedConsolidation]]:
        """Record the transition under the evidence key's exclusive lock, then find
        the live consolidations resting on it (by index): (new validity, them)."""
        v.choice(action, "action", VALIDITY_ACTIONS)
        reason = v.text(reason, "reason", v.MAX_REASON)
        allowed, target = VALIDITY_ACTIONS[action]
        conn = self._conn
        lock_evidence_exclusive(conn, evidence_id)
        row = require_row(conn, "evidence", _Validity, evidence_id, "evidence")
        if row["validity"] not in allowed:
            raise BadInput(f"cannot {action} evidence that is {row['validity']}")
        execute(
            conn,
            "add_evidence_transition",
            evidence_id=evidence_id,
            from_status=row["validity"],
            to_status=target,
            reason=reason,
            actor=actor,
        )
        affected = fetch(conn, "affected_consolidations", AffectedConsolidation, evidence_id=evidence_id)
        threads: list[UUID | None] = [*sorted({r["thread_id"] for r in affected}, key=str)]
        for thread_id in threads or [None]:
            events.append(
                conn,
                f"evidence.{target}",
                actor=actor,
                thread_id=thread_id,
                subject_id=evidence_id,
                payload={"from": row["validity"], "reason": reason, "affected": len(affected)},
            )
        return target, affected

    def reassess(
        self,
        consolidations: Sequence[AffectedConsolidation],
        *,
        judge: Judge,
        actor: str,
        cause: str,
        pins: Pins,
        pinned: dict[UUID, tuple[str, str]],
        start_cascade: bool,
    ) -> tuple[list[Verdict], UUID | None]:
        """Project the current validity of each consolidation's evidence onto its
        memory item (``consolidations``: rows of ``affected_consolidations``), as
        ``judge`` decides each one: (results in input order, the cascade's first
        continuation when ``start_cascade`` and some were left contested).

        Under the node locks of the whole batch, taken in ascending key order
        (deadlock-free: it takes no other lock, and every other writer holds at
        most one node lock); then one read, one statement for the memory moves
        and one for the retraction proposals the material ones open (pinned to
        ``pins``, else the thread's; cached per thread in ``pinned``). The first
        continuation is recorded in this same transaction, so it outlives a crash
        or an outage right after."""
        if not consolidations:
            return [], None
        conn = self._conn
        ids = [str(c["id"]) for c in consolidations]
        by_key = sorted(consolidations, key=lambda c: int(c["node_lock_key"]))
        # One lock_node per node in ascending key order, sent in one round trip.
        execute_many(conn, "lock_node", [{"logical_node_id": str(c["logical_node_id"])} for c in by_key])
        rows = {str(r["id"]): r for r in fetch(conn, "reassess_load", Loaded, ids=ids)}
        moves: Moves = []
        results = []
        for consolidation_id in ids:
            if consolidation_id not in rows:
                raise NotFound(f"no consolidation with id {consolidation_id}")
            results.append(judge(rows[consolidation_id], cause, moves))
        memory.move_many(conn, moves, actor)
        material = [r for r in results if r["material"]]
        if material:
            reason = f"{cause}; the decision does not survive without it"
            _open_retractions(conn, material, rows, pins, pinned, reason=reason, actor=actor)
        started = None
        if start_cascade:
            contested = [
                (str(r["node_version_id"]), cascade.CASCADE_DEPTH)
                for r in results
                if r["memory_status"] == "contested"
            ]
            started = cascade.begin(conn, contested, actor=actor)
        return results, started

    def provisional_challenged(
        self, *, memory_item_ids: Sequence[UUID] | None, limit: int
    ) -> list[AffectedConsolidation]:
        """Live consolidations whose memory is provisional while some support is
        challenged (all, or those of ``memory_item_ids``), in lock-key order."""
        v.count(memory_item_ids or [], "memory items", limit=10_000)
        return fetch(
            self._conn,
            "provisional_challenged",
            AffectedConsolidation,
            memory_item_ids=[str(i) for i in memory_item_ids] if memory_item_ids is not None else None,
            limit=limit,
        )


def _open_retractions(
    conn: Connection,
    results: Sequence[Verdict],
    rows: Mapping[str, Loaded],
    pins: Pins,
    pinned: dict[UUID, tuple[str, str]],
    *,
    reason: str,
    actor: str,
) -> None:
    """Open (or find the open) retraction proposal of each result's
    consolidation, pinned to the versions in force for its thread (as a
    proposal opened by hand is), and set each result's ``proposal_id``."""
    thread_of = {r["consolidation_id"]: rows[str(r["consolidation_id"])]["thread_id"] for r in results}
    for thread in set(thread_of.values()) - pinned.keys():
        pinned[thread] = retraction.default_versions(conn, thread, pins)
    opened = retraction.open_many(
        conn,
        [(consolidation_id, thread, pinned[thread]) for consolidation_id, thread in thread_of.items()],
        reason=reason,
        actor=actor,
    )
    for r in results:
        r["proposal_id"] = opened[str(r["consolidation_id"])]
