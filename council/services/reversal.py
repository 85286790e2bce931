"""Use cases of governed reversal (docs/architecture.md §5): a validity change and its
reassessment, the bounded cascade, and lazy re-verification.

A validity change is one transaction (the evidence lock, the transition, the
affected consolidations found by index); reassessing them is later
transactions, a batch each under its node locks, two in flight at once (one
batch is decided in Python while the other's statements run on the server).
The consolidations left contested start the cascade; its first step runs in
the command's own work, and what the bound cut off is a continuation recorded
in the ledger, handed to the scheduler (the maintenance queue) or — with no
queue at hand — continued here in later transactions. Bounded per step, never
lossy: should the message be lost, the sweep finds the continuation's row.

Re-verification is lazy: :func:`reverify` — run by the periodic sweep, and for
the provisional items a reentry packet or memory read touched (they ask for
it through :func:`request_reverification`) — first re-verifies provisional
memory whose support is challenged (stable again when the decision holds
without it, else contested with a retraction proposal, and its dependents
provisional), then dispatches one review of every open proposal that has none
yet, to the profiles that worked its thread (``council.services.reviewers``); the
last review run to end adjudicates it (``council.services.execution``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from uuid import UUID

from council import config
from council.adapters.scheduler import Scheduler
from council.domain import reassessment
from council.domain.commands import IdRef
from council.domain.reassessment import Verdict
from council.domain.results.reversal import CascadeHandOn, Reassessed, Reverified, ValidityChanged
from council.ledger.commit_rows import AffectedConsolidation
from council.ledger.retraction import Pins
from council.ledger.reversal import Judge
from council.services.ports import UnitOfWork
from council.services.reviewers import dispatch_review

# Consolidations reassessed per transaction (their node locks held together), and
# transactions in flight at once.
REASSESS_BATCH = 100
REASSESS_WORKERS = 2


def change_validity(
    uow: UnitOfWork,
    scheduler: Scheduler | None,
    evidence: IdRef,
    *,
    action: str,
    reason: str,
    actor: str,
) -> ValidityChanged:
    """Challenge, invalidate or reaffirm evidence, then reassess what rests on it."""
    with uow() as tx:
        evidence_id = tx.resolve("evidence", evidence)
        target, affected = tx.reversal.change_validity(evidence_id, action=action, reason=reason, actor=actor)
    results, frontier = reassess(
        uow, affected, judge=reassessment.reassess, actor=actor, cause=f"evidence {evidence_id} {target}"
    )
    return ValidityChanged(
        id=evidence_id,
        validity=target,
        affected=[Reassessed(**r) for r in results],
        proposals=[r["proposal_id"] for r in results if r["proposal_id"]],
        cascade=_cascade(uow, scheduler, frontier, actor),
    )


def reassess(
    uow: UnitOfWork,
    consolidations: Sequence[AffectedConsolidation],
    *,
    judge: Judge,
    actor: str,
    cause: str,
) -> tuple[list[Verdict], list[UUID]]:
    """Judge the consolidations in batches, one transaction each under its node
    locks; (the results in input order, the cascade continuations they started)."""
    rule_set, grouping = config.proposal_pins()
    pins = Pins(rule_set, grouping)
    pinned: dict[UUID, tuple[str, str]] = {}
    batches = [consolidations[i : i + REASSESS_BATCH] for i in range(0, len(consolidations), REASSESS_BATCH)]

    def one(batch: Sequence[AffectedConsolidation]) -> tuple[list[Verdict], UUID | None]:
        with uow() as tx:
            return tx.reversal.reassess(
                batch, judge=judge, actor=actor, cause=cause, pins=pins, pinned=pinned, start_cascade=True
            )

    with ThreadPoolExecutor(max_workers=REASSESS_WORKERS) as pool:
        done = list(pool.map(one, batches))
    results = [result for batch, _ in done for result in batch]
    return results, [started for _, started in done if started is not None]


def continue_cascade(
    uow: UnitOfWork,
    scheduler: Scheduler | None,
    continuation_ids: Sequence[UUID],
    *,
    actor: str = "worker:cascade",
) -> CascadeHandOn:
    """Continue recorded continuations (those no other step took already) by one step, then hand on."""
    return _cascade(uow, scheduler, list(continuation_ids), actor)


def reverify(
    uow: UnitOfWork,
    scheduler: Scheduler,
    limit: int = 20,
    *,
    memory_item_ids: Sequence[UUID] | None = None,
    actor: str = "worker:reverify",
) -> Reverified:
    """Re-verify challenged provisional memory (all, or ``memory_item_ids``), at
    most ``limit`` per call; cascade from what becomes contested; then dispatch
    a one-round review of each open proposal no review was dispatched for yet,
    to its thread's reviewers — or, with none, leave it for a manual review with
    the reason (``unstaffed``); one the thread's budget refuses likewise (``unfunded``).
    Memory that is provisional only because it depends on a contested node waits
    for that node's adjudication."""
    with uow() as tx:
        candidates = tx.reversal.provisional_challenged(memory_item_ids=memory_item_ids, limit=limit)
    results, frontier = reassess(
        uow,
        candidates,
        judge=reassessment.reverify,
        actor=actor,
        cause="re-verification of challenged support",
    )
    if frontier:
        _cascade(uow, scheduler, frontier, actor)
    with uow() as tx:
        awaiting = tx.retractions.awaiting_review(limit=limit)
    dispatched: list[UUID] = []
    unstaffed: list[UUID] = []
    unfunded: list[UUID] = []
    for row in awaiting:
        made = dispatch_review(uow, scheduler, row["id"], row["thread_id"], actor=actor)
        if made.unstaffed:
            unstaffed.append(made.proposal_id)
        elif made.unfunded:
            unfunded.append(made.proposal_id)
        elif made.dispatch_id is not None and not made.already_dispatched:
            dispatched.append(made.dispatch_id)
    return Reverified(
        reverified=[Reassessed(**r) for r in results],
        dispatched=dispatched,
        unstaffed=unstaffed,
        unfunded=unfunded,
    )


def request_reverification(scheduler: Scheduler, memory: Sequence[Mapping[str, object]]) -> list[UUID]:
    """A read touched these memory items: queue re-verification of the provisional ones."""
    provisional = [UUID(str(item["id"])) for item in memory if item.get("status") == "provisional"]
    if provisional:
        scheduler.enqueue_reverification(provisional)
    return provisional


def reverify_touched(
    scheduler_of: Callable[[], Scheduler | None], memory: Sequence[Mapping[str, object]]
) -> str | None:
    """The one re-verification on read (docs/architecture.md §5, lazily), for every face
    (CLI, HTTP API, MCP): a read showed these memory items, so queue re-verification of the
    provisional ones. The read never fails for it: with no broker, or the broker down, the
    periodic sweep does the work, and the reason it was not queued is returned for the face
    to say (None: queued, or nothing to queue)."""
    if not any(item.get("status") == "provisional" for item in memory):
        return None
    try:
        scheduler = scheduler_of()
        if scheduler is not None:
            request_reverification(scheduler, memory)
    except Exception as exc:  # the broker is down: the sweep will get to them
        name = type(exc).__name__
        return f"re-verification of provisional memory not queued ({name}); the sweep will do it"
    return None


def _cascade(uow: UnitOfWork, scheduler: Scheduler | None, frontier: list[UUID], actor: str) -> CascadeHandOn:
    """One step from ``frontier``; what it cut off goes to the scheduler, or — with
    none — is continued here, a transaction a step."""
    with uow() as tx:
        step = tx.cascades.step(frontier, actor=actor)
    steps, reached, marked = 1, step.reached, step.marked_provisional
    while step.continuation_id is not None:
        if scheduler is not None:
            scheduler.enqueue_cascade([step.continuation_id])
            break
        with uow() as tx:
            step = tx.cascades.step([step.continuation_id], actor=actor)
        steps, reached, marked = steps + 1, reached + step.reached, marked + step.marked_provisional
    return CascadeHandOn(
        reached=reached,
        marked_provisional=marked,
        steps=steps,
        continuation=step.continuation,
        continuation_id=step.continuation_id,
        continuation_queued=step.continuation_id is not None and scheduler is not None,
    )
