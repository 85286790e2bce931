"""What an outside agent is answered over MCP (docs/architecture.md §7, outside agents).

Every read made for a run says how many stances it recorded as that run's
exposures (``exposures_recorded``): what the agent was shown is on the ledger
before the answer leaves.
"""

from __future__ import annotations

from uuid import UUID

from council.domain.reentry import ReentryPacket
from council.domain.results.base import Result, Row
from council.domain.results.consolidation import Evaluated, GroupShape, RuleReason
from council.domain.results.runs import Applied


class RunBegun(Row):
    """A run an outside agent began: it holds it until it submits its output."""

    id: UUID
    thread_id: UUID
    agent: str
    model: str
    provider: str
    parent_run_id: UUID | None
    status: str


class PacketServed(Result):
    """The reentry packet as served to a run (blind: stances redacted, nothing recorded)."""

    run_id: UUID | None
    exposures_recorded: int
    packet: ReentryPacket


class StanceShown(Result):
    """One run's claim on the node version, attributed."""

    claim_id: UUID
    run_id: UUID
    agent: str
    provider: str
    type: str
    confidence: float
    rationale: str
    cites: list[UUID]


class NodeStatus(Result):
    """A node version's independence groups and why it is or is not consolidated.
    Without a run, stances are withheld: counts and reasons only."""

    node_version_id: UUID
    logical_node_id: UUID
    thread_id: UUID
    content: str
    status: str
    consolidated: bool
    consolidation_id: UUID | None
    outcome: str  # what the rules decide now: consolidate | not_ready
    reasons: list[RuleReason]
    support_groups: int
    dispute_groups: int
    n_eff: float | None  # effective independent support votes (a v3 snapshot's table); else None
    groups: list[GroupShape] | None
    claims: list[StanceShown] | None
    run_id: UUID | None
    exposures_recorded: int


class OutputSubmitted(Result):
    """A begun run's output, checked and written through the workers' path; then
    each version it touched decided by the committer (or queued for it)."""

    run_id: UUID
    status: str
    applied: Applied
    evaluations: list[Evaluated]
    queued_evaluations: list[UUID]
    evaluation_deferred: str | None = None  # written, but the committer could not decide it now
