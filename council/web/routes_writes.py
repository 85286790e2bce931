"""Writes, for the holder of the server's write token: dispatch a council,
change evidence validity, propose a retraction. The same services as the CLI."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Depends, Path

from council.ledger.retraction import propose
from council.ledger.reversal import MOVES
from council.services.reversal import change
from council.services.runs import dispatch as dispatch_runs
from council.web.errors import documented
from council.web.models import DispatchIn, DispatchOut, ProposalOut, ReasonIn, ValidityOut
from council.web.wiring import Wired, jsonable, require_write

router = APIRouter(dependencies=[Depends(require_write)], responses=documented(401, 403, 404, 409, 413, 503))


@router.post(
    "/threads/{thread_id}/dispatch",
    status_code=202,
    response_model=DispatchOut,
    tags=["writes"],
    summary="Create a council's runs in Postgres and enqueue them (like `council dispatch`)",
)
def dispatch(thread_id: UUID, body: DispatchIn, wired: Wired) -> Any:
    created = dispatch_runs(
        wired.engine,
        wired.required_scheduler(),
        thread_id=thread_id,
        agents=body.agents,
        mode=body.mode,
        rounds=body.rounds,
        actor=wired.actor,
        proposal_id=body.proposal_id,
    )
    return jsonable({**created, "mode": body.mode, "rounds": body.rounds})


@router.post(
    "/evidence/{evidence_id}/{action}",
    response_model=ValidityOut,
    tags=["writes"],
    summary="Challenge, invalidate or reaffirm evidence; reassesses the consolidations resting on it",
)
def evidence_validity(
    evidence_id: UUID,
    action: Annotated[str, Path(json_schema_extra={"enum": list(MOVES)})],
    body: ReasonIn,
    wired: Wired,
) -> Any:
    result = change(
        wired.engine, wired.scheduler(), evidence_id, action=action, reason=body.reason, actor=wired.actor
    )
    return jsonable(result)


@router.post(
    "/consolidations/{consolidation_id}/retraction",
    status_code=201,
    response_model=ProposalOut,
    tags=["writes"],
    summary="Open a retraction proposal (pins the rule set and grouping version in force)",
)
def retraction(consolidation_id: UUID, body: ReasonIn, wired: Wired) -> Any:
    return jsonable(propose(wired.engine, consolidation_id, reason=body.reason, actor=wired.actor))
