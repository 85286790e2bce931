"""Writes, for the holder of the server's write token: dispatch a council, change
evidence validity, propose, vote on and adjudicate a retraction, resolve a node. The
same services as the CLI."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Depends, Header, Path

from council.domain.results.budgets import ThreadBudget
from council.domain.results.observation import Resolved
from council.domain.results.retraction import Adjudicated, Proposal, Vote
from council.domain.results.reversal import ValidityChanged
from council.domain.results.runs import Dispatched
from council.domain.vocabulary import VALIDITY_ACTIONS
from council.services.budgets import set_thread_budget
from council.services.dispatch import dispatch as dispatch_runs
from council.services.observation import resolve as resolve_node
from council.services.retraction import adjudicate as adjudicate_proposal
from council.services.retraction import propose_retraction
from council.services.retraction import vote as cast_vote
from council.services.reversal import change_validity
from council.web.errors import documented
from council.web.models import AdjudicateIn, BudgetIn, DispatchIn, ReasonIn, ResolveIn, VoteIn
from council.web.wiring import Wired, require_write, unicode_body

router = APIRouter(
    dependencies=[Depends(require_write), Depends(unicode_body)],
    responses=documented(401, 403, 404, 409, 413, 503),
)


@router.post(
    "/threads/{thread_id}/dispatch",
    status_code=202,
    response_model=Dispatched,
    tags=["writes"],
    summary="Create a council's runs in Postgres and enqueue them (like `council dispatch`)",
)
def dispatch(
    thread_id: UUID,
    body: DispatchIn,
    wired: Wired,
    idempotency_key: Annotated[
        str | None,
        Header(
            min_length=1,
            max_length=200,
            description="A retry with the same key returns the first dispatch and creates nothing.",
        ),
    ] = None,
) -> Dispatched:
    """The runs are committed before they are sent: with the broker down the dispatch stands,
    ``delivery`` is ``deferred`` and the sweep sends the runs when the broker is back."""
    return dispatch_runs(
        wired.uow,
        wired.required_scheduler(),
        thread_id,
        body.agents,
        mode=body.mode,
        rounds=body.rounds,
        actor=wired.actor,
        proposal=body.proposal_id,
        key=idempotency_key,
        budget_usd=body.budget_usd,
        controls=body.controls,
    )


@router.post(
    "/threads/{thread_id}/budget",
    response_model=ThreadBudget,
    tags=["writes"],
    summary="Set or remove the thread's budget (like `council thread budget`)",
)
def thread_budget(thread_id: UUID, body: BudgetIn, wired: Wired) -> ThreadBudget:
    """Appended to the thread's budget history; later dispatches reserve against it."""
    return set_thread_budget(
        wired.uow, thread_id, body.usd, clear=body.usd is None, actor=wired.actor, reason=body.reason
    )


@router.post(
    "/evidence/{evidence_id}/{action}",
    response_model=ValidityChanged,
    tags=["writes"],
    summary="Challenge, invalidate or reaffirm evidence; reassesses the consolidations resting on it",
)
def evidence_validity(
    evidence_id: UUID,
    action: Annotated[str, Path(json_schema_extra={"enum": list(VALIDITY_ACTIONS)})],
    body: ReasonIn,
    wired: Wired,
) -> ValidityChanged:
    return change_validity(
        wired.uow, wired.scheduler(), evidence_id, action=action, reason=body.reason, actor=wired.actor
    )


@router.post(
    "/consolidations/{consolidation_id}/retraction",
    status_code=201,
    response_model=Proposal,
    tags=["writes"],
    summary="Open a retraction proposal (pins the rule set and grouping version in force)",
)
def retraction(consolidation_id: UUID, body: ReasonIn, wired: Wired) -> Proposal:
    return propose_retraction(wired.uow, consolidation_id, reason=body.reason, actor=wired.actor)


@router.post(
    "/proposals/{proposal_id}/votes",
    status_code=201,
    response_model=Vote,
    tags=["writes"],
    summary="A run's vote on a retraction proposal (like `council retraction vote`)",
)
def vote(proposal_id: UUID, body: VoteIn, wired: Wired) -> Vote:
    return cast_vote(
        wired.uow,
        proposal_id,
        body.run_id,
        choice=body.vote,
        confidence=body.confidence,
        rationale=body.rationale,
        actor=wired.actor,
    )


@router.post(
    "/proposals/{proposal_id}/adjudicate",
    response_model=Adjudicated,
    tags=["writes"],
    summary="Decide a proposal by its pinned rules, or restore (`council retraction adjudicate`)",
)
def adjudicate(proposal_id: UUID, body: AdjudicateIn, wired: Wired) -> Adjudicated:
    return adjudicate_proposal(
        wired.uow, proposal_id, actor=wired.actor, restore=body.restore, reason=body.reason
    )


@router.post(
    "/nodes/{version_id}/resolutions",
    status_code=201,
    response_model=Resolved,
    tags=["writes"],
    summary="An outside fact deciding a node version true or false (like `council resolve`)",
)
def resolve(version_id: UUID, body: ResolveIn, wired: Wired) -> Resolved:
    return resolve_node(
        wired.uow,
        version_id,
        outcome="true" if body.outcome else "false",
        source=body.source,
        reason=body.reason,
        actor=wired.actor,
    )
