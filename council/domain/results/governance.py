"""What the live page reads to show governance (`GET /threads/{id}/governance`):
why each open head is or is not consolidated (each rule's ✓/✗), the evidence with
its validity and history, and the retraction proposals with their votes by
independent group and their adjudication."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from council.domain.results.base import Result, Row
from council.domain.results.consolidation import GroupShape, RuleReason
from council.domain.results.evidence import EvidenceShown
from council.domain.results.history import DetailedTransition
from council.domain.results.threads import ReviewSetting


class NodeDecision(Result):
    """Why a head is or is not consolidated: for a consolidated one, the stored decision that
    consolidated it; for any other, the decision it would get now (read only)."""

    node_version_id: UUID
    content: str
    outcome: str  # consolidate | not_ready
    consolidated: bool  # a live consolidation of it exists
    reasons: list[RuleReason]


class CastVote(Row):
    run_id: UUID
    agent: str
    provider: str
    vote: str
    confidence: float
    rationale: str
    created_at: datetime


class ProposalShown(Row):
    id: UUID
    consolidation_id: UUID
    node_version_id: UUID
    content: str
    reason: str
    status: str
    opened_by: str
    created_at: datetime
    votes: list[CastVote]
    groups: list[GroupShape]  # the votes' independence groups: support = retract, dispute = keep
    history: list[DetailedTransition]  # adjudications (and restores)


class Governance(Result):
    thread_id: UUID
    review: ReviewSetting
    decisions: list[NodeDecision]
    evidence: list[EvidenceShown]
    proposals: list[ProposalShown]
