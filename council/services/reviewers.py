"""Who reviews a retraction proposal, and its review dispatch (docs/architecture.md §5).

The automatic review of a proposal goes to the agent profiles that worked its
thread — or to the reviewers its review setting names — resolved here, real or
simulated as they would run here, never a simulated voter beside real ones
(the rule: ``council.domain.reviewers``). What was left out, and why, is in the
dispatch's event; when nobody qualifies, the proposal stays for a manual review
and a ``retraction.review_unstaffed`` event says why, once per setting. When the
thread's budget refuses the review dispatch, the proposal stays for a manual review
and a ``retraction.review_unfunded`` event says why, once per budget: the sweep goes
on to the other proposals, and takes this one again when the budget changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from council.adapters.scheduler import Scheduler
from council.agents.profiles import load_profiles, simulation_mode
from council.domain.commands import IdRef
from council.domain.reviewers import SETTING, THREAD, Candidate, Reviewers, choose
from council.errors import BadInput, BudgetRefused
from council.services.dispatch import dispatch
from council.services.ports import UnitOfWork


@dataclass(frozen=True)
class ReviewDispatch:
    """One proposal's automatic review: its dispatch (None when nobody qualified),
    whether it existed already, who was chosen and left out, and — with nobody —
    whether this call told so (``unstaffed``; a racing sweep may have told it first); with
    the review refused by the thread's budget, whether this call told that (``unfunded``)."""

    proposal_id: UUID
    reviewers: Reviewers
    dispatch_id: UUID | None = None
    already_dispatched: bool = False
    unstaffed: bool = False
    unfunded: bool = False


def dispatch_review(
    uow: UnitOfWork,
    scheduler: Scheduler,
    proposal_id: UUID,
    thread_id: UUID,
    *,
    actor: str,
) -> ReviewDispatch:
    """Dispatch one review of the proposal (once, however many sweeps race) to its
    thread's reviewers; or, with none, record why it stays for a manual review."""
    reviewers, setting_id = _choose(uow, thread_id)
    if not reviewers.agents:
        with uow() as tx:
            told = tx.reviews.record_unstaffed(proposal_id, thread_id, setting_id, reviewers, actor=actor)
        return ReviewDispatch(proposal_id=proposal_id, reviewers=reviewers, unstaffed=told)
    try:
        made = dispatch(
            uow,
            scheduler,
            thread_id,
            reviewers.agents,
            mode="review",
            rounds=1,
            actor=actor,
            proposal=proposal_id,
            once_per_proposal=True,
            reviewers=reviewers,
        )
    except BudgetRefused as refused:  # nothing was written: say so once, and go on
        with uow() as tx:
            told = tx.reviews.record_unfunded(proposal_id, thread_id, str(refused), actor=actor)
        return ReviewDispatch(proposal_id=proposal_id, reviewers=reviewers, unfunded=told)
    return ReviewDispatch(
        proposal_id=proposal_id,
        reviewers=reviewers,
        dispatch_id=made.dispatch_id,
        already_dispatched=made.already_dispatched,
    )


def _choose(uow: UnitOfWork, thread_id: UUID) -> tuple[Reviewers, UUID | None]:
    """The thread's reviewers as resolved here, and the id of the setting in force."""
    with uow() as tx:
        setting = tx.reviews.in_force(thread_id)
        worked = tx.reviews.worked_by(thread_id)
    mode = simulation_mode()
    profiles = load_profiles(mode)
    names = setting.review.agents if setting.review.agents is not None else worked.profiles
    candidates = [
        Candidate(name, profiles[name].simulated, profiles[name].why)
        if name in profiles
        else Candidate(name, known=False)
        for name in names
    ]
    reviewers = choose(
        candidates,
        source=SETTING if setting.review.agents is not None else THREAD,
        thread_real=worked.real,
        simulation_refused=mode == "never",
    )
    return reviewers, setting.setting_id


def review_agents(uow: UnitOfWork, thread: IdRef) -> list[str]:
    """The agents a review of ``thread``'s proposals goes to (what `council dispatch --mode
    review` takes when no --agents is named); BadInput when nobody qualifies."""
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
    reviewers, _ = _choose(uow, thread_id)
    if not reviewers.agents:
        raise BadInput(f"nobody qualifies to review on thread {thread_id}: name the reviewers with --agents")
    return list(reviewers.agents)
