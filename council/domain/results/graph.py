"""The reasoning graph: nodes and their versions, edges, citations, claims,
branches and pending actions, as the write and read commands return them."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import Field

from council.domain.results.base import Result, Row
from council.domain.results.history import Transition


class VersionCreated(Result):
    logical_node_id: UUID
    version_id: UUID
    version_no: int
    thread_id: UUID
    branch_id: UUID
    status: str
    content_sha256: str
    edge_ids: list[UUID]
    citation_ids: list[UUID]
    originate_claim_id: UUID | None


class StatusChanged(Result):
    version_id: UUID
    from_status: str
    status: str


class Edge(Row):
    id: UUID
    thread_id: UUID
    branch_id: UUID
    kind: str
    from_version_id: UUID
    to_version_id: UUID
    created_by_run_id: UUID | None
    created_at: datetime


class Citation(Row):
    id: UUID
    node_version_id: UUID
    evidence_id: UUID
    branch_id: UUID
    claim_id: UUID | None
    run_id: UUID | None
    role: str
    interpretation: str
    created_at: datetime


class Claim(Row):
    id: UUID
    run_id: UUID
    node_version_id: UUID
    claim_type: str
    confidence: float
    rationale: str
    created_at: datetime


class ClaimAdded(Claim):
    citation_ids: list[UUID]


class VersionShown(Row):
    version_id: UUID
    logical_node_id: UUID
    thread_id: UUID
    branch_id: UUID
    version_no: int
    parent_version_id: UUID | None
    content: str
    content_sha256: str
    initial_status: str
    status: str
    created_by_run_id: UUID | None
    created_at: datetime
    edges_out: list[Edge]
    edges_in: list[Edge]
    claims: list[Claim]
    citations: list[Citation]
    status_history: list[Transition]


class Branch(Row):
    id: UUID
    thread_id: UUID
    kind: str
    parent_branch_id: UUID | None
    fork_version_id: UUID | None
    divergence_type: str | None
    objective: str | None
    label: str
    created_by_run_id: UUID | None
    status: str
    status_changed_at: datetime
    created_at: datetime


class BranchList(Result):
    items: list[Branch]


class Merge(Row):
    id: UUID
    thread_id: UUID
    source_branch_id: UUID
    target_branch_id: UUID
    preferred_version_id: UUID | None
    rationale: str
    created_by_run_id: UUID | None
    actor: str
    created_at: datetime


class Closed(Result):
    """A branch or pending action moved to a final status."""

    id: UUID
    status: str


class Action(Row):
    id: UUID
    thread_id: UUID
    branch_id: UUID
    node_version_id: UUID | None
    description: str
    acceptance_condition: str
    created_by_run_id: UUID | None
    status: str
    status_changed_at: datetime
    created_at: datetime


class GraphVersion(Row):
    version_id: UUID
    logical_node_id: UUID
    version_no: int
    branch_id: UUID
    parent_version_id: UUID | None
    content: str
    created_by_run_id: UUID | None
    created_at: datetime
    status: str
    claims: int


class GraphNode(Result):
    logical_node_id: UUID
    branch_id: UUID
    head_version_id: UUID | None
    versions: list[GraphVersion]


class GraphEdge(Row):
    id: UUID
    kind: str
    from_version_id: UUID
    to_version_id: UUID
    branch_id: UUID
    created_by_run_id: UUID | None


class GraphBranch(Row):
    id: UUID
    kind: str
    label: str
    status: str
    parent_branch_id: UUID | None
    divergence_type: str | None


class GraphConsolidation(Row):
    id: UUID
    logical_node_id: UUID
    node_version_id: UUID
    status: str
    created_at: datetime


class GraphMemory(Row):
    id: UUID
    consolidation_id: UUID
    logical_node_id: UUID
    node_version_id: UUID
    status: str
    status_changed_at: datetime


class AlternativeMember(Result):
    """A logical node of an alternative set, with its option label when it is an option."""

    logical_node_id: UUID
    label: str | None = None


class AlternativeSet(Result):
    """Propositions that cannot both hold (docs/architecture.md §4): the component of
    contradicts edges and option sets, in the order of their logical node ids."""

    members: list[AlternativeMember]


class ThreadGraph(Result):
    """A thread's logical nodes with every version (status, claim count), the edges
    between versions, its branches, consolidations and memory items, and its
    alternative sets."""

    thread_id: UUID
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    branches: list[GraphBranch]
    consolidations: list[GraphConsolidation]
    memory: list[GraphMemory]
    alternative_sets: list[AlternativeSet] = Field(default_factory=list)
