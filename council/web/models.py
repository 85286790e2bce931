"""Request and response documents of the HTTP API (they make /openapi.json).

Response models name the keys clients rely on and allow more: like the CLI's
JSON, a document may carry further keys; the named ones are the contract.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from council.domain import validate as v
from council.domain.vocabulary import RUN_MODES

MAX_EVENT_ID = 2**63 - 1  # events.id is a bigint


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorOut(BaseModel):
    detail: str = Field(description="A one-line reason.")


class HealthOut(BaseModel):
    ok: bool = Field(description="Always true: the process answers.")


class ThreadOut(Open):
    id: UUID
    title: str
    objective: str
    rule_set_id: str
    grouping_algorithm_id: str
    created_at: datetime


class ThreadDetail(ThreadOut):
    main_branch_id: UUID
    counts: dict[str, int]


class ThreadList(Open):
    items: list[ThreadOut]


class VersionOut(Open):
    version_id: UUID
    logical_node_id: UUID
    version_no: int
    status: str
    content: str
    claims: int


class GraphNode(Open):
    logical_node_id: UUID
    head_version_id: UUID | None
    versions: list[VersionOut]


class GraphEdge(Open):
    id: UUID
    kind: str
    from_version_id: UUID
    to_version_id: UUID


class GraphOut(Open):
    thread_id: UUID
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    branches: list[dict[str, Any]]
    consolidations: list[dict[str, Any]]
    memory: list[dict[str, Any]]


class RunOut(Open):
    id: UUID
    thread_id: UUID
    agent: str
    model: str
    provider: str
    round: int
    status: str
    simulated: bool
    request_sha256: str | None


class RunList(Open):
    items: list[RunOut]


class RunDetail(RunOut):
    exposures: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    children: list[UUID]


class GroupOut(Open):
    id: str
    kind: str = Field(description="support or dispute")
    runs: list[str]
    providers: list[str]
    component_runs: list[str]


class GroupsOut(Open):
    node_version_id: UUID
    grouping_algorithm_id: str
    groups: list[GroupOut]
    support_groups: int
    dispute_groups: int


class NodeOut(Open):
    version_id: UUID
    logical_node_id: UUID
    version_no: int
    status: str
    content: str
    edges_out: list[dict[str, Any]]
    edges_in: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    citations: list[dict[str, Any]]
    status_history: list[dict[str, Any]]


class HistoryOut(Open):
    logical_node_id: UUID
    consolidations: list[dict[str, Any]]
    evaluations: list[dict[str, Any]]


class ConsolidationOut(Open):
    id: UUID
    logical_node_id: UUID
    node_version_id: UUID
    status: str
    snapshot_sha256: str
    decision: dict[str, Any]
    history: list[dict[str, Any]]
    evidence_ids: list[UUID]
    memory: dict[str, Any] | None


class ReplayOut(Open):
    match: bool
    snapshot_sha256: str
    replayed_sha256: str


class MemoryItem(Open):
    id: UUID
    status: str
    content: str
    consolidation_id: UUID
    history: list[dict[str, Any]]


class MemoryList(Open):
    items: list[MemoryItem]


class EventOut(Open):
    id: int
    kind: str
    actor: str
    subject_id: str | None
    payload: dict[str, Any]
    created_at: datetime


class EventList(Open):
    items: list[EventOut]


class DispatchIn(BaseModel):
    agents: list[str] = Field(
        min_length=1, max_length=20, description="Profile names, e.g. claude, codex, glm."
    )
    mode: str = Field(
        default="independent", json_schema_extra={"enum": [m for m in RUN_MODES if m != "external"]}
    )
    rounds: int = Field(default=1, ge=1, le=20)
    proposal_id: UUID | None = Field(default=None, description="The retraction proposal (review mode).")


class DispatchOut(Open):
    dispatch_id: UUID
    run_ids: list[UUID]
    agents: list[str]
    simulated: list[str]
    mode: str
    rounds: int


class ReasonIn(BaseModel):
    reason: str = Field(min_length=1, max_length=v.MAX_REASON)


class ValidityOut(Open):
    id: UUID
    validity: str
    affected: list[dict[str, Any]]
    proposals: list[UUID]
    cascade: dict[str, Any]


class ProposalOut(Open):
    id: UUID
    consolidation_id: UUID
    status: str
    rule_set_id: str
    grouping_algorithm_id: str
