"""`council ask`: from a question to what the council concluded, in one document."""

from __future__ import annotations

from uuid import UUID

from council.domain.results.answer import AgentSummary, Answer, AnswerGroup
from council.domain.results.base import Result
from council.domain.results.budgets import BudgetState, Reservation
from council.domain.results.consolidation import RuleReason
from council.domain.results.runs import Cost, Dispatched, DispatchedRun


class Stance(Result):
    """An agent's last claim on a proposition in this ask (its highest round)."""

    agent: str
    run_id: UUID
    round: int
    claim_type: str
    confidence: float
    rationale: str  # one line, at most 200 characters


class Proposition(Result):
    version_id: UUID
    content: str
    consolidated: bool  # a live consolidation of this version stands
    consolidation_id: UUID | None
    why: str  # one line: the rules that held (consolidated) or those that failed
    reasons: list[RuleReason]  # the stored decision's (consolidated) or the current evaluation's
    contested: bool  # an independent dispute group stands against it
    groups: list[AnswerGroup]
    stances: list[Stance]


class FailedRun(Result):
    run_id: UUID
    agent: str
    round: int
    error: str | None


class AskOutcome(Result):
    """What the council concluded, its answer first (what it established, or that it
    established nothing, with the live alternatives and their independent support), then
    each agent's own summary in its words, each proposition the ask's runs judged and why it
    did or did not consolidate, who failed and why, what it cost, and the commands to read
    more. ``settled`` is false when the wait ended before the committer had decided every
    proposition that could consolidate."""

    answer: Answer
    summaries: list[AgentSummary]
    thread_id: UUID
    question: str
    dispatch_id: UUID
    agents: list[str]
    rounds: int  # in all: the proposing, cross-review and deliberative rounds
    complete: bool  # every run ended
    settled: bool
    answered: int  # agents whose every run succeeded
    failed: int  # runs that failed
    propositions: list[Proposition]
    contested: list[UUID]
    failures: list[FailedRun]
    cost: Cost
    budget: BudgetState  # the thread's budget after the ask: spent, reserved, remaining
    runs: list[DispatchedRun]
    next: list[str]
    # What the dispatch reserved before its runs were sent (None: no budget applied), to set
    # beside ``cost``, what they were billed.
    reservation: Reservation | None = None


class AskAccepted(Result):
    """`POST /ask`: the question's thread (new or continued) and its dispatch, created and
    enqueued; ``outcome`` is the URL to poll for the :class:`AskOutcome` (``complete`` and
    ``settled`` say when it is final)."""

    thread_id: UUID
    created_thread: bool
    evidence_ids: list[UUID]
    dispatch: Dispatched
    outcome: str
