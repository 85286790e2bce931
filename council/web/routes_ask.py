"""`POST /ask`: the question asked through the same service as `council ask`, answered
at once (202) with the thread and dispatch and the URL to poll; `GET
/dispatches/{id}/outcome`: what the council concluded, as `council ask --json` prints it."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from council.domain import validate as v
from council.domain.protocol import BLIND_COUNCIL_ROUNDS, MAX_ROUNDS
from council.domain.results.ask import AskAccepted, AskOutcome
from council.domain.vocabulary import DEFAULT_COUNCIL
from council.services.ask import Question, ask, outcome_now
from council.web.errors import documented
from council.web.wiring import Wired, require_read, require_write, unicode_body

router = APIRouter()


class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=v.MAX_OBJECTIVE)
    thread_id: UUID | None = Field(default=None, description="Continue this thread instead of opening one.")
    agents: list[str] = Field(default=list(DEFAULT_COUNCIL), min_length=1, max_length=20)
    rounds: int = Field(
        default=2,
        ge=0,
        le=MAX_ROUNDS - BLIND_COUNCIL_ROUNDS,
        description="Deliberative rounds after the proposing and cross-review rounds.",
    )
    budget_usd: float | None = Field(
        default=None, ge=0, lt=1_000_000, description="The dispatch's budget in USD."
    )
    controls: bool = Field(
        default=False,
        description="Also run each deliberative run as a control on the blind briefing (never support).",
    )
    options: list[str] = Field(
        default_factory=list,
        max_length=100,
        description="LABEL=TEXT each (`ask --option`): a multiple-choice question, its options rivals.",
    )


@router.post(
    "/ask",
    status_code=202,
    response_model=AskAccepted,
    tags=["writes"],
    dependencies=[Depends(require_write), Depends(unicode_body)],
    responses=documented(401, 403, 404, 409, 413, 503),
    summary="Ask the council (like `council ask`): thread, dispatch, then poll the outcome",
)
def ask_route(body: AskIn, wired: Wired) -> AskAccepted:
    asked = ask(
        wired.uow,
        wired.required_scheduler(),
        Question(
            text=body.question,
            agents=tuple(body.agents),
            rounds=body.rounds,
            thread=body.thread_id,
            budget_usd=body.budget_usd,
            controls=body.controls,
            options=tuple(body.options),
        ),
        actor=wired.actor,
    )
    return AskAccepted(
        thread_id=asked.thread_id,
        created_thread=asked.created_thread,
        evidence_ids=asked.evidence_ids,
        dispatch=asked.dispatch,
        outcome=f"/dispatches/{asked.dispatch.dispatch_id}/outcome",
    )


@router.get(
    "/dispatches/{dispatch_id}/outcome",
    response_model=AskOutcome,
    responses=documented(401, 404, 503),
    dependencies=[Depends(require_read)],  # a read like any other: the read token off loopback
    summary="What the council concluded on a dispatch's propositions (`council ask --json`)",
)
def ask_outcome(dispatch_id: UUID, wired: Wired) -> AskOutcome:
    return outcome_now(wired.uow, dispatch_id)
