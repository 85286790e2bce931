"""Agent runs: what `council run …`, `dispatch`, `preview` and `profiles` return."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, Protocol
from uuid import UUID

from pydantic import Field

from council.domain.results.base import Document, Result, Row
from council.domain.results.budgets import Reservation
from council.domain.results.graph import Claim


class RunSummary(Row):
    """A run with its lineage and operational state (thread and dispatch listings)."""

    id: UUID
    thread_id: UUID
    dispatch_id: UUID | None
    parent_run_id: UUID | None
    agent: str
    model: str
    provider: str
    simulated: bool
    round: int
    mode: str
    proposal_id: UUID | None
    status: str
    attempt: int
    request_sha256: str | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    # A control run (dispatch --controls): the deliberative run it re-ran on the blind
    # briefing. Its claims are never counted as support.
    control_of: UUID | None = None


class RunList(Result):
    items: list[RunSummary]


class Run(RunSummary):
    lease_owner: str | None
    lease_expires_at: datetime | None
    request: Document | None
    input_fingerprint: list[str] | None
    usage: Document | None
    cost_usd: float | None
    lint_findings: list[Document] | None
    executor: Document | None


class RunRecorded(Run):
    exposed_to: list[UUID]


class RunClosed(Result):
    """A run recorded by hand, closed by its recorder: it takes no more claims."""

    id: UUID
    agent: str
    status: str
    claims: int


class RunExposure(Row):
    id: UUID
    run_id: UUID
    kind: str  # stance | proposition
    channel: str  # briefing | previous_round | explicit | mcp:…
    exposed_to_run_id: UUID | None
    claim_id: UUID | None
    node_version_id: UUID | None
    created_at: datetime
    exposed_to_agent: str | None = None  # the agent of the run whose stance it was


class Attempt(Result):
    attempt: int
    worker: str
    claimed_at: datetime | None
    ended_at: datetime | None
    status: str | None
    reason: str | None


class RunTrace(Result):
    """One agent-CLI call of an attempt (call 2 is the re-prompt): the bounded event stream
    and what was read from it (tool calls, commands, files read, turns, usage, exit status)."""

    attempt: int
    call: int
    runtime: str
    cli_version: str
    exit_status: int | None
    stopped: str | None
    trace: Document
    created_at: datetime


class OpenedEvidence(Result):
    """An evidence item an agent-CLI run opened with its own tool, or cited, or both."""

    evidence_id: UUID
    opened: bool
    cited: bool
    opened_at: datetime | None
    citations: int


class RunAnswer(Result):
    """The text one round of a run attempt returned, kept by its SHA-256 (docs/architecture.md §7);
    ``text`` is cut at the storage bound when ``truncated`` (``byte_length`` is the original)."""

    attempt: int
    round: int
    sha256: str
    text: str
    byte_length: int
    truncated: bool
    created_at: datetime


class RunShown(Run):
    """Lineage, exposures, request hash, claims, the pinned executor and each attempt;
    for an agent-CLI run also its trace and the evidence it opened beside what it cited."""

    runtime: str | None
    attempts: list[Attempt]
    exposures: list[RunExposure]
    claims: list[Claim]
    children: list[UUID]
    trace: list[RunTrace] | None = None
    opened_evidence: list[OpenedEvidence] | None = None
    answer: RunAnswer | None = None  # the last kept round of the last attempt
    answers: list[RunAnswer] = Field(default_factory=list)  # every kept round, by attempt and round


class ExecutorShown(Result):
    model: str
    provider: str
    simulated: bool
    why: str


class DispatchedRun(Result):
    id: UUID
    agent: str
    round: int
    status: str
    attempt: int
    simulated: bool
    error: str | None  # a failed run's reason
    request_sha256: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    control_of: UUID | None = None  # a control run: the run it re-ran blind (never support)


class Costed(Protocol):
    """A run as far as its cost goes (a dispatched run, a listed run)."""

    @property
    def cost_usd(self) -> float | None: ...
    @property
    def prompt_tokens(self) -> int | None: ...
    @property
    def completion_tokens(self) -> int | None: ...


class Cost(Result):
    """Tokens and USD over runs that report them (a simulated run costs 0); ``unpriced``
    counts runs that reported tokens but whose model had no price (cost unknown, so
    ``usd`` is then a lower bound)."""

    usd: float
    prompt_tokens: int
    completion_tokens: int
    unpriced: int = 0

    @classmethod
    def of(cls, runs: Sequence[Costed]) -> Cost:
        return cls(
            usd=round(sum(r.cost_usd or 0.0 for r in runs), 6),
            prompt_tokens=sum(r.prompt_tokens or 0 for r in runs),
            completion_tokens=sum(r.completion_tokens or 0 for r in runs),
            unpriced=sum(
                1
                for r in runs
                if r.cost_usd is None and (r.prompt_tokens is not None or r.completion_tokens is not None)
            ),
        )


class Dispatched(Result):
    """A dispatch's runs created in Postgres and enqueued; with ``--wait``, how they ended."""

    dispatch_id: UUID
    run_ids: list[UUID]
    agents: list[str]
    simulated: list[str]
    simulation: str
    executors: dict[str, ExecutorShown]
    mode: str
    rounds: int
    already_dispatched: bool = False
    # The client's idempotency key; replayed: a dispatch with this key existed, and this is it.
    idempotency_key: str | None = None
    replayed: bool = False
    # sent: the broker took the runs; deferred: it did not (deferred_reason says why), and the
    # sweep sends them once it is back; none: nothing new to send.
    delivery: str = "sent"
    deferred_reason: str | None = None
    # What the dispatch reserved under a budget before its runs were enqueued (None: no budget).
    reservation: Reservation | None = None
    # Each run of a later round is paired with a control run on the blind briefing.
    controls: bool = False
    runs: list[DispatchedRun] | None = None
    complete: bool | None = None
    # With --wait: runs that failed, agents whose every run succeeded, and what the runs cost.
    failed: int | None = None
    answered: int | None = None
    cost: Cost | None = None


class PreviewExposure(Result):
    kind: str
    channel: str
    exposed_to_run_id: str | None
    claim_id: str | None
    node_version_id: str | None


class Preview(Result):
    """Exactly the request a run would send now, and its SHA-256 (what the run stores)."""

    request: Document
    request_sha256: str
    simulated: bool
    provider: str
    executor: Document
    exposures: list[PreviewExposure]
    input_features: list[str]


class ProfileShown(Result):
    name: str
    runtime: str
    model: str
    runs_as: str
    provider: str
    api_base: str | None
    api_key_env: str
    key_set: bool | None
    params: Document
    max_turns: int | None
    timeout_s: float | None
    simulated: bool
    why: str
    cli_version: str | None = None  # an agent CLI's version a dispatch here would pin


class Profiles(Result):
    simulation: str
    profiles: list[ProfileShown]


# How an attempt ended: it wrote the run's end (succeeded, failed), a newer attempt owned the
# run by then (fenced), or the run was done or leased by a live attempt already (skipped).
ExecutedStatus = Literal["succeeded", "failed", "fenced", "skipped"]


class Executed(Result):
    """How one attempt at a run ended (what a runs-queue task reports)."""

    run_id: UUID
    status: ExecutedStatus
    error: str | None = None
    touched_versions: list[UUID] = Field(default_factory=list)
    lint_findings: int = 0
    next_round_runs: list[UUID] = Field(default_factory=list)
    adjudication: str | None = None


class Applied(Result):
    """What a run's output wrote: the ids of each kind, and every version it touched
    (claimed on, made, or revised) — each is evaluated next."""

    claims: list[UUID]
    nodes: list[UUID]
    versions: list[UUID]
    evidence: list[UUID]
    forks: list[UUID]
    pending_actions: list[UUID]
    votes: list[UUID] = Field(default_factory=list)
    edges: list[UUID] = Field(default_factory=list)  # between versions that existed (``edges``)
    touched_versions: list[UUID]
    lint_findings: int = 0
