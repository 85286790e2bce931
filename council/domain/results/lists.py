"""Every noun listable: what `council evidence list`, `node list`, `run list`,
`dispatch list`/`show`, `proposal list`, `consolidation list`, `claim list` and
`action list` (and their GET routes) return."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from council.domain.results.base import Result, Row
from council.domain.results.runs import Cost, RunSummary


class EvidenceItem(Row):
    id: UUID
    title: str
    source_kind: str
    source_uri: str | None
    media_type: str
    byte_size: int
    content_sha256: str
    validity: str
    validity_changed_at: datetime
    added_by: str
    added_at: datetime


class EvidenceList(Result):
    thread_id: UUID
    items: list[EvidenceItem]


class NodeItem(Row):
    """A logical node at its head version."""

    logical_node_id: UUID
    version_id: UUID
    version_no: int
    branch_id: UUID
    branch_kind: str
    status: str
    content: str
    created_at: datetime
    support_claims: int
    dispute_claims: int
    abstain_claims: int
    live_consolidation_id: UUID | None
    live_consolidation_version_id: UUID | None


class NodeList(Result):
    thread_id: UUID
    items: list[NodeItem]


class RunItem(RunSummary):
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None


class RunListing(Result):
    """The newest ``limit`` runs that pass the filters, in creation order;
    ``truncated`` when more passed."""

    items: list[RunItem]
    limit: int
    truncated: bool
    cost: Cost


class DispatchItem(Row):
    id: UUID
    thread_id: UUID
    mode: str
    agents: list[str]
    rounds: int
    proposal_id: UUID | None
    created_at: datetime
    run_count: int  # its runs so far (later rounds are created as each round ends)
    succeeded: int
    failed: int
    unfinished: int
    cost: Cost
    controls: bool = False  # its later rounds' runs are paired with control runs


class DispatchList(Result):
    thread_id: UUID
    items: list[DispatchItem]


class DispatchShown(DispatchItem):
    runs: list[RunItem]


class ProposalItem(Row):
    id: UUID
    thread_id: UUID
    consolidation_id: UUID
    node_version_id: UUID
    reason: str
    status: str
    opened_by: str
    created_at: datetime
    status_changed_at: datetime
    votes: int


class ProposalList(Result):
    items: list[ProposalItem]


class Listing(Result):
    """The newest ``limit`` items that pass the filters, in creation order; ``truncated``
    when more passed."""

    limit: int
    truncated: bool


class ConsolidationItem(Row):
    """A consolidation of a node version, with the version's content and its memory item's status."""

    id: UUID
    thread_id: UUID
    logical_node_id: UUID
    node_version_id: UUID
    content: str
    rule_set_id: str
    status: str  # live, superseded or retracted
    memory_status: str | None
    snapshot_sha256: str
    created_at: datetime
    status_changed_at: datetime


class ConsolidationList(Listing):
    items: list[ConsolidationItem]


class ClaimItem(Row):
    """A claim, with the run that made it (``control``: a control run's, never support)."""

    id: UUID
    run_id: UUID
    thread_id: UUID
    agent: str
    round: int
    control: bool
    node_version_id: UUID
    claim_type: str
    confidence: float
    rationale: str
    created_at: datetime


class ClaimList(Listing):
    items: list[ClaimItem]


class ActionItem(Row):
    """A pending action and its acceptance condition."""

    id: UUID
    thread_id: UUID
    branch_id: UUID
    node_version_id: UUID | None
    description: str
    acceptance_condition: str
    status: str  # open, satisfied or cancelled
    created_by_run_id: UUID | None
    created_at: datetime
    status_changed_at: datetime


class ActionList(Listing):
    items: list[ActionItem]
