"""What follows a run's end (docs/architecture.md §7): its versions evaluated, the next
round of its dispatch opened, a completed review's proposal adjudicated. Called by
:mod:`council.services.execution` once a run is terminal."""

from __future__ import annotations

from uuid import UUID

from council.adapters.scheduler import Scheduler
from council.domain.results.runs import Executed
from council.ledger.run_rows import ClaimedRun, RoundEnd
from council.ledger.runs import TERMINAL
from council.services.ports import UnitOfWork
from council.services.retraction import adjudicate_if_automatic
from council.services.rounds import evaluate_closed_round, open_next_round

REVIEW_ACTOR = "worker:review"
ROUND_ACTOR = "worker:round"  # decides a closing round's versions before the next round


def follow_up(
    uow: UnitOfWork, scheduler: Scheduler, run: ClaimedRun, result: Executed, ended: RoundEnd | None = None
) -> Executed:
    """What a run's end sets going: the evaluation of the versions it touched, the next round
    of its dispatch when this run closed one, and the adjudication of the proposal a review
    dispatch it completed was about. ``ended``: what the run's end found of its round, asked
    in its writing transaction (None: not asked, so it is asked here).

    A dispatch's runs are evaluated once a round, not once a run: the run that closes a
    round has the round's versions decided (before the next round, :mod:`rounds`) or, after
    the last round, sent to the commit queue. A decision in the middle of a round would be
    taken again, on more claims, when the round closes, so the sweep leaves an open round's
    claims to its close (``unfinished.evaluations``; every run ends, by its lease and
    retries at the latest). A run outside a dispatch, a review,
    and a run under a quorum rule (each council member's end can complete or break a
    quorum) have their versions evaluated at once. A run whose end left its round open sets
    nothing else going, and costs no transaction: the run that closes it does."""
    once_a_round = run.dispatch_id is not None and run.mode != "review" and not run.quorum_rule
    if not once_a_round:
        _evaluate_now(uow, scheduler, run, result)
    if run.dispatch_id is None or (ended is not None and not ended.closed):
        return result
    following: list[UUID] = []
    if run.dispatch_rounds is None or run.round < run.dispatch_rounds:
        if ended is not None and ended.opened is not None:  # its writing transaction opened it
            following = list(ended.opened)
            if following:
                scheduler.enqueue_runs(following)
        else:
            following = open_next_round(
                uow,
                scheduler,
                run.dispatch_id,
                run.round + 1,
                mode=run.mode,
                actor=ROUND_ACTOR,
                closed=None if ended is None else ended.versions,
            )
    elif once_a_round:  # the last round: its versions once it closes
        if ended is None:
            evaluate_closed_round(uow, scheduler, run.dispatch_id, run.round)
        elif ended.versions:
            scheduler.enqueue_evaluations(list(ended.versions))
    adjudication = None
    if run.mode == "review" and run.proposal_id is not None and not following:
        adjudication = _adjudicate_when_reviewed(uow, scheduler, run.dispatch_id, run.proposal_id)
    return result.model_copy(update={"next_round_runs": following, "adjudication": adjudication})


def _evaluate_now(uow: UnitOfWork, scheduler: Scheduler, run: ClaimedRun, result: Executed) -> None:
    versions = list(result.touched_versions)
    # An ended council member may complete (or break) a quorum: only a rule set with
    # min_council_answered reads it, so a thread under another (as its rule set stood at
    # the claim) pays no transaction for it.
    if run.dispatch_id is not None and run.quorum_rule:
        with uow() as tx:
            versions = list(dict.fromkeys([*versions, *tx.runs.quorum_versions(run.id)]))
    if versions:
        scheduler.enqueue_evaluations(versions)


def _adjudicate_when_reviewed(
    uow: UnitOfWork, scheduler: Scheduler, dispatch_id: UUID, proposal_id: UUID
) -> str | None:
    """The last run of a review dispatch to end adjudicates its proposal. Runs
    ending together may both see the dispatch complete; adjudication is
    idempotent and serialized under the node lock, so that is harmless. A
    retraction queues the evaluation of the node's rivals, which it blocked."""
    with uow() as tx:
        runs = tx.runs.of_dispatch(dispatch_id)
    if all(r.status in TERMINAL for r in runs):
        decided = adjudicate_if_automatic(uow, proposal_id, actor=REVIEW_ACTOR)
        if decided is not None and decided.rivals_due:
            scheduler.enqueue_evaluations(decided.rivals_due)
        return None if decided is None else decided.outcome
    return None
