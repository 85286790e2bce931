"""The summary `council demo` prints: every step, what the council did, and where to look closer."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from pydantic import Field

from council.domain.results.base import Result

Outcome = Literal["retracted", "restored", "superseded", "pending"]


class DemoStep(Result):
    name: str
    ok: bool
    seconds: float = Field(ge=0)
    error: str | None


class DemoRun(Result):
    id: UUID
    agent: str
    round: int = Field(ge=1)
    status: str
    simulated: bool


class DemoDispatch(Result):
    id: UUID
    mode: Literal["independent", "deliberative", "review", "council"]
    rounds: int = Field(ge=1)
    runs: list[DemoRun]


class DemoConsolidation(Result):
    """The council's answer (of its consolidated propositions, the one its outcome leads with)."""

    id: UUID
    node_version_id: UUID
    content: str
    committed_by: str
    support_groups: int = Field(ge=0)
    evidence_ids: list[UUID]
    replay_match: bool


class DemoInvalidation(Result):
    evidence_id: UUID
    reason: str
    memory_status: str
    proposal_id: UUID
    proposals: list[UUID]


class DemoRetraction(Result):
    proposal_id: UUID
    outcome: Outcome
    all: dict[str, Outcome]


class GroupCounts(Result):
    support: int = Field(ge=0)
    dispute: int = Field(ge=0)


class DemoStack(Result):
    home: str
    left_running: bool
    stopped: bool


class DemoSummary(Result):
    """``ok`` is true only when every step succeeded (the command then exits 0)."""

    ok: bool
    steps: list[DemoStep]
    elapsed_s: float = Field(ge=0)
    thread_id: UUID | None
    question: str | None = None
    evidence_ids: list[UUID] = Field(default_factory=list)
    decisive_evidence_id: UUID | None = None
    node_version_ids: dict[str, UUID]
    dispatches: list[DemoDispatch]
    groups_by_round: dict[str, dict[int, GroupCounts]] = Field(
        description="Per node (by its role in the demo) and round: the independence groups among the "
        "runs of that round and the ones before it."
    )
    consolidation: DemoConsolidation | None
    invalidation: DemoInvalidation | None
    retraction: DemoRetraction | None
    page_url: str | None
    reentry_markdown: str | None
    simulated: list[str]
    stack: DemoStack
    look_closer: list[str]
