"""Every noun listable over HTTP, through the services the CLI's list commands use:
a thread's evidence, nodes and dispatches, one dispatch, and by filter runs, proposals,
consolidations, claims and pending actions."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Depends, Query

from council.domain.results.lists import (
    ActionList,
    ClaimList,
    ConsolidationList,
    DispatchList,
    DispatchShown,
    EvidenceList,
    NodeList,
    ProposalList,
    RunListing,
)
from council.domain.vocabulary import (
    ClaimType,
    ConsolidationStatus,
    PendingActionStatus,
    ProposalStatus,
    RunStatus,
)
from council.services.lists import (
    MAX_RUNS,
    list_actions,
    list_claims,
    list_consolidations,
    list_proposals,
    list_runs,
    show_dispatch,
    thread_dispatches,
    thread_evidence,
    thread_nodes,
)
from council.web.errors import documented
from council.web.wiring import Wired, require_read

router = APIRouter(tags=["lists"], dependencies=[Depends(require_read)], responses=documented(401, 503))
KNOWN = documented(404)
AGENT = Annotated[str | None, Query(min_length=1, max_length=100, description="Only this agent's runs.")]
LIMIT = Annotated[int, Query(ge=1, le=MAX_RUNS)]


@router.get(
    "/threads/{thread_id}/evidence",
    response_model=EvidenceList,
    responses=KNOWN,
    summary="The thread's evidence in the order it was added, with its validity",
)
def evidence(thread_id: UUID, wired: Wired) -> EvidenceList:
    return thread_evidence(wired.uow, thread_id)


@router.get(
    "/threads/{thread_id}/nodes",
    response_model=NodeList,
    responses=KNOWN,
    summary="The thread's nodes at their head version: status, claims, consolidation",
)
def nodes(thread_id: UUID, wired: Wired) -> NodeList:
    return thread_nodes(wired.uow, thread_id)


@router.get(
    "/threads/{thread_id}/dispatches",
    response_model=DispatchList,
    responses=KNOWN,
    summary="The thread's dispatches with their runs by status and cost",
)
def dispatches(thread_id: UUID, wired: Wired) -> DispatchList:
    return thread_dispatches(wired.uow, thread_id)


@router.get(
    "/dispatches/{dispatch_id}",
    response_model=DispatchShown,
    responses=KNOWN,
    summary="One dispatch with its runs, failures and cost",
)
def dispatch(dispatch_id: UUID, wired: Wired) -> DispatchShown:
    return show_dispatch(wired.uow, dispatch_id)


@router.get(
    "/runs",
    response_model=RunListing,
    responses=documented(404),
    summary="Runs passing the filters, the newest `limit` in creation order",
)
def runs(
    wired: Wired,
    thread: UUID | None = None,
    status: RunStatus | None = None,
    agent: AGENT = None,
    dispatch: UUID | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_RUNS)] = 200,
) -> RunListing:
    return list_runs(wired.uow, thread=thread, status=status, agent=agent, dispatch=dispatch, limit=limit)


@router.get(
    "/proposals",
    response_model=ProposalList,
    responses=documented(404),
    summary="Retraction proposals with the version under review and the votes cast",
)
def proposals(wired: Wired, thread: UUID | None = None, status: ProposalStatus | None = None) -> ProposalList:
    return list_proposals(wired.uow, thread=thread, status=status)


@router.get(
    "/consolidations",
    response_model=ConsolidationList,
    responses=documented(404),
    summary="Consolidations by thread, status and node (a version: its node's), the newest `limit`",
)
def consolidations(
    wired: Wired,
    thread: UUID | None = None,
    status: ConsolidationStatus | None = None,
    node: UUID | None = None,
    limit: LIMIT = 200,
) -> ConsolidationList:
    return list_consolidations(wired.uow, thread=thread, status=status, node=node, limit=limit)


@router.get(
    "/claims",
    response_model=ClaimList,
    responses=documented(404),
    summary="Claims by run, node version, thread and type, the newest `limit` in creation order",
)
def claims(
    wired: Wired,
    run: UUID | None = None,
    node: UUID | None = None,
    thread: UUID | None = None,
    type: ClaimType | None = None,  # the query parameter is `type`, as the CLI's --type
    limit: LIMIT = 200,
) -> ClaimList:
    return list_claims(wired.uow, run=run, node=node, thread=thread, claim_type=type, limit=limit)


@router.get(
    "/actions",
    response_model=ActionList,
    responses=documented(404),
    summary="Pending actions by thread, status and node version, the newest `limit`",
)
def actions(
    wired: Wired,
    thread: UUID | None = None,
    status: PendingActionStatus | None = None,
    node: UUID | None = None,
    limit: LIMIT = 200,
) -> ActionList:
    return list_actions(wired.uow, thread=thread, status=status, node=node, limit=limit)
