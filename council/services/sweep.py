"""The sweep (docs/architecture.md §7, Delivery): re-enqueue work of every kind that was
created but never finished.

Work travels in Celery messages but lives in the ledger. A message can be
lost — consumed while the database was away, after its task's retries were
spent, or with a worker that died — and the database can go away between the
transactions of one use case, so every kind of work can be found from the
ledger alone:

- runs that are created or queued with no message waiting for them (a
  scheduler that coalesces skips runs whose message still waits), or running
  on an expired lease;
- evaluations: open or tentative heads holding claims that no evaluation or
  consolidation of them saw (a dispatch round's once the round has closed: its
  closing run has them evaluated);
- cascade continuations that no step continued;
- reassessments: live consolidations whose memory is still stable, and has
  not moved since evidence they rest on was challenged or invalidated;
- the next round of a dispatch whose round ended;
- the adjudication of a proposal whose review dispatch ended (unless its
  thread reviews by hand).

Re-verification needs nothing here: the periodic ``council.reverify`` pass
(its own beat entry) re-verifies every provisional item whose support is
challenged, whether or not a request for it was lost.

Each kind is bounded per sweep (oldest first); what one sweep leaves, the next
finds. Duplicates are harmless: a run's attempts are fenced, the committer is
idempotent, a continuation is taken by one step only, a round is created once,
reassessment and adjudication are idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from council.adapters.scheduler import Scheduler
from council.domain import reassessment
from council.services.ports import UnitOfWork
from council.services.retraction import adjudicate_if_automatic
from council.services.reversal import reassess
from council.services.rounds import open_next_round

SWEEP_LIMIT = 500  # of each kind, per sweep
ACTOR = "worker:sweep"


@dataclass(frozen=True)
class Swept:
    runs: list[UUID]
    evaluations: list[UUID]
    cascades: list[UUID]
    reassessed: int
    rounds: list[UUID]
    adjudicated: list[UUID]


def sweep(
    uow: UnitOfWork, scheduler: Scheduler, *, settle_s: float, runs_settle_s: float, limit: int = SWEEP_LIMIT
) -> Swept:
    """Find unfinished work older than ``settle_s`` (runs: ``runs_settle_s``) and
    hand it on: to the scheduler, or — reassessment, rounds, adjudication — do it."""
    with uow() as tx:
        runs = tx.unfinished.runs(settle_s=runs_settle_s, limit=limit)
        versions = tx.unfinished.evaluations(settle_s=settle_s, limit=limit)
        continuations = tx.unfinished.cascades(settle_s=settle_s, limit=limit)
        unreassessed = tx.unfinished.reassessments(settle_s=settle_s, limit=limit)
        due = tx.unfinished.next_rounds(settle_s=settle_s, limit=limit)
        reviewed = tx.unfinished.adjudications(settle_s=settle_s, limit=limit)
    if runs:
        scheduler.enqueue_runs(runs)
    if versions:
        scheduler.enqueue_evaluations(versions)
    for continuation_id in continuations:  # one message each: a step merges what it takes
        scheduler.enqueue_cascade([continuation_id])
    if unreassessed:
        _, frontier = reassess(
            uow, unreassessed, judge=reassessment.reassess, actor=ACTOR, cause="sweep: validity changed"
        )
        if frontier:
            scheduler.enqueue_cascade(frontier)
    rounds: list[UUID] = []
    for dispatch_id, round_no, mode in due:
        if open_next_round(uow, scheduler, dispatch_id, round_no, mode=mode, actor=ACTOR):
            rounds.append(dispatch_id)
    decided = {p: adjudicate_if_automatic(uow, p, actor=ACTOR) for p in reviewed}
    adjudicated = [p for p, result in decided.items() if result is not None and result.outcome != "pending"]
    return Swept(runs, versions, continuations, len(unreassessed), rounds, adjudicated)
