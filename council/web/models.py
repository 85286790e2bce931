"""The HTTP API's own documents: request bodies, errors and health (they make
/openapi.json with the services' result types, which are the responses)."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from pydantic import BaseModel, Field

from council.domain import validate as v
from council.domain.vocabulary import DISPATCH_MODES

MAX_EVENT_ID = 2**63 - 1  # events.id is a bigint


class ErrorOut(BaseModel):
    detail: str = Field(description="A one-line reason.")


class HealthOut(BaseModel):
    ok: bool = Field(description="Always true: the process answers.")


class DispatchIn(BaseModel):
    agents: list[str] = Field(
        min_length=1, max_length=20, description="Profile names, e.g. claude, codex, glm."
    )
    mode: str = Field(default="independent", json_schema_extra={"enum": list(DISPATCH_MODES)})
    rounds: int = Field(
        default=1,
        ge=0,
        le=20,
        description="Rounds; under mode council the deliberative rounds after its proposing and "
        "cross-review rounds (0 to 18).",
    )
    proposal_id: UUID | None = Field(default=None, description="The retraction proposal (review mode).")
    budget_usd: float | None = Field(
        default=None,
        ge=0,
        lt=1_000_000,
        description="The dispatch's budget in USD, reserved before any run is sent.",
    )
    controls: bool = Field(
        default=False,
        description="Deliberative and council only: each run of a round shown stances is also run as a "
        "control on the blind briefing (never counted as support).",
    )


class BudgetIn(BaseModel):
    usd: float | None = Field(ge=0, lt=1_000_000, description="The thread's budget in USD; null removes it.")
    reason: str = Field(default="", max_length=v.MAX_REASON)


class ReasonIn(BaseModel):
    reason: str = Field(min_length=1, max_length=v.MAX_REASON)


class VoteIn(BaseModel):
    run_id: UUID = Field(description="The voting run.")
    vote: Literal["endorse", "dispute", "abstain"] = Field(description="endorse = retract, dispute = keep.")
    confidence: float | None = Field(default=None, ge=0, le=1)
    rationale: str = Field(default="", max_length=v.MAX_RATIONALE)


class AdjudicateIn(BaseModel):
    restore: bool = Field(default=False, description="Undo the retraction this proposal decided.")
    reason: str = Field(default="", max_length=v.MAX_REASON, description="Why (needed with restore).")


class ResolveIn(BaseModel):
    outcome: bool = Field(description="Whether the outside fact says the node version is true.")
    source: str = Field(min_length=1, max_length=500, description="Where the fact comes from.")
    reason: str = Field(min_length=1, max_length=v.MAX_REASON)
