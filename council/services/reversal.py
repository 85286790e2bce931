"""Evidence validity changes with their bounded cascade (DESIGN §5).

The ledger does one bounded cascade step in the command's own work; what the
bound cut off is a continuation recorded in the ledger (``council.ledger.cascade``),
handed to the scheduler (the maintenance queue) or — with no queue at hand —
continued here in later transactions. Bounded per step, never lossy: should
the message be lost, the sweep finds the continuation's row.

Re-verification is lazy: :func:`reverify` — run by the periodic sweep, and for
the provisional items a reentry packet or memory read touched (those reads
ask for it through :func:`request_reverification`) — first re-verifies
provisional memory whose support is challenged (stable again when the decision
holds without it, else contested with a retraction proposal), then dispatches
one review of every open proposal that has none yet; the last review run to
end adjudicates it (``council.services.runs``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Engine

from council.ledger import cascade
from council.ledger.db import unit_of_work
from council.ledger.retraction import awaiting_review
from council.ledger.reversal import change_validity, reverify_challenged
from council.services.runs import dispatch
from council.services.scheduling import Scheduler

REVIEWERS = ("claude", "codex", "glm")


def change(
    engine: Engine, scheduler: Scheduler | None, evidence_id: UUID, *, action: str, reason: str, actor: str
) -> dict[str, Any]:
    result = change_validity(engine, evidence_id, action=action, reason=reason, actor=actor)
    result["cascade"] = _hand_on(engine, scheduler, result["cascade"], actor)
    return result


def continue_cascade(
    engine: Engine,
    scheduler: Scheduler | None,
    continuation_ids: Sequence[UUID],
    *,
    actor: str = "worker:cascade",
) -> dict[str, Any]:
    """Continue recorded continuations (those no other step took already) by one step, then hand on."""
    return _hand_on(engine, scheduler, _step(engine, continuation_ids, actor), actor)


def reverify(
    engine: Engine,
    scheduler: Scheduler,
    agents: Sequence[str] = REVIEWERS,
    limit: int = 20,
    *,
    memory_item_ids: Sequence[UUID] | None = None,
    actor: str = "worker:reverify",
) -> dict[str, Any]:
    """Re-verify challenged provisional memory (all, or ``memory_item_ids``),
    then dispatch a one-round review of each open proposal no review was
    dispatched for yet (at most ``limit`` of each per call)."""
    checked = reverify_challenged(engine, memory_item_ids=memory_item_ids, limit=limit, actor=actor)
    dispatched = []
    for row in awaiting_review(engine, limit=limit):
        made = dispatch(
            engine,
            scheduler,
            thread_id=row["thread_id"],
            agents=agents,
            mode="review",
            rounds=1,
            actor=actor,
            proposal_id=row["id"],
            once_per_proposal=True,
        )
        if not made.get("already_dispatched"):
            dispatched.append(made["dispatch_id"])
    return {"reverified": checked, "dispatched": dispatched}


def request_reverification(scheduler: Scheduler, memory: Sequence[Mapping[str, Any]]) -> list[UUID]:
    """A read touched these memory items: queue re-verification of the provisional ones."""
    provisional = [UUID(str(item["id"])) for item in memory if item.get("status") == "provisional"]
    if provisional:
        scheduler.enqueue_reverification(provisional)
    return provisional


def _hand_on(engine: Engine, scheduler: Scheduler | None, step: dict[str, Any], actor: str) -> dict[str, Any]:
    steps, reached, marked = 1, step["reached"], step["marked_provisional"]
    while step["continuation_id"] is not None:
        if scheduler is not None:
            scheduler.enqueue_cascade([step["continuation_id"]])
            break
        step = _step(engine, [step["continuation_id"]], actor)
        steps, reached, marked = steps + 1, reached + step["reached"], marked + step["marked_provisional"]
    return {
        "reached": reached,
        "marked_provisional": marked,
        "steps": steps,
        "continuation": [[str(v), d] for v, d in step["continuation"]],
        "continuation_id": step["continuation_id"],
        "continuation_queued": step["continuation_id"] is not None and scheduler is not None,
    }


def _step(engine: Engine, continuation_ids: Sequence[UUID], actor: str) -> dict[str, Any]:
    with unit_of_work(engine) as conn:
        return cascade.step(conn, continuation_ids, actor=actor)
