"""Consolidation: decisions, groups, history, replay and memory, as the
commands and routes that read or make them return them."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from council.domain.results.base import Document, Result, Row
from council.domain.results.history import DetailedTransition, Transition


class RuleReason(Result):
    rule: str
    ok: bool
    detail: str


class GroupShape(Result):
    id: str
    kind: str  # support | dispute
    runs: list[str]
    providers: list[str]
    max_confidence: float
    component_runs: list[str]


class Evaluated(Result):
    """One node version decided by the committer (``council consolidate``)."""

    node_version_id: UUID
    logical_node_id: UUID
    thread_id: UUID
    dry_run: bool
    snapshot_sha256: str
    outcome: str  # committed | already_consolidated | not_ready | would_commit
    consolidation_id: UUID | None
    reasons: list[RuleReason]
    evaluation_id: UUID | None = None
    decision: str | None = None
    groups: list[GroupShape] | None = None
    memory_item_id: UUID | None = None
    superseded_consolidation_id: UUID | None = None
    evidence_ids: list[str] | None = None


class GroupWithProviders(GroupShape):
    run_providers: dict[str, str]


class GroupsShown(Result):
    """The independence groups of a node version's claiming runs, as of now."""

    node_version_id: UUID
    grouping_algorithm_id: str
    claims: int
    groups: list[GroupWithProviders]
    support_groups: int
    dispute_groups: int
    # Kish's effective number of independent support votes, from the correlation table a
    # rule set with min_effective_support measures (council/domain/effective.py); else None.
    n_eff: float | None = None


class RecordedConsolidation(Row):
    id: UUID
    node_version_id: UUID
    status: str
    snapshot_sha256: str
    reasons: list[RuleReason]
    created_at: datetime
    n_eff: float | None = None  # as its effective_support reason states it (None: no such rule)


class RecordedEvaluation(Row):
    id: UUID
    node_version_id: UUID
    outcome: str
    snapshot_sha256: str
    reasons: list[RuleReason]
    created_at: datetime
    n_eff: float | None = None  # as its effective_support reason states it (None: no such rule)


class History(Result):
    """Every consolidation and recorded evaluation of a logical node."""

    logical_node_id: UUID
    consolidations: list[RecordedConsolidation]
    evaluations: list[RecordedEvaluation]


class MemoryRef(Row):
    id: UUID
    status: str


class ConsolidationShown(Row):
    """A consolidation as stored, with its status history, evidence and memory item."""

    id: UUID
    thread_id: UUID
    logical_node_id: UUID
    node_version_id: UUID
    rule_set_id: str
    grouping_algorithm_id: str
    snapshot: Document
    snapshot_sha256: str
    decision: dict[str, Any]  # read key by key (its reasons) by the services
    status: str
    status_changed_at: datetime
    created_at: datetime
    history: list[Transition]
    evidence_ids: list[UUID]
    memory: MemoryRef | None


class Replayed(Result):
    """A stored decision rebuilt from the rows it names (``match``: hash and decision agree)."""

    id: UUID
    kind: str  # consolidation | evaluation
    match: bool
    snapshot_sha256: str
    replayed_sha256: str
    hash_match: bool
    decision_match: bool
    stored_outcome: str
    replayed_outcome: str
    rule_set_id: str
    grouping_algorithm_id: str
    differences: list[str]


class MemoryItem(Row):
    id: UUID
    thread_id: UUID
    consolidation_id: UUID
    logical_node_id: UUID
    node_version_id: UUID
    content: str
    status: str
    status_changed_at: datetime
    created_at: datetime
    history: list[DetailedTransition]


class MemoryList(Result):
    items: list[MemoryItem]
    status: str | None
