"""The shapes of a consolidation snapshot (council/domain/snapshot.py builds and hashes it;
docs/architecture.md §4). Plain typed dictionaries, as stored in ``consolidations.snapshot``."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from council.domain.effective import PairCorrelation
from council.domain.jsonvalue import JsonValue
from council.domain.quorum import Seat


class NodeRetraction(TypedDict):
    transition_id: str | None
    consolidation_id: str | None
    status: str | None


class SnapshotNode(TypedDict):
    version_id: str
    logical_node_id: str
    thread_id: str
    version_no: int
    content_sha256: str
    status: str
    status_transition_id: str | None
    head_version_id: str
    version_ids: list[str]
    retraction: NotRequired[NodeRetraction]  # format v2 only


class SnapshotBranch(TypedDict):
    id: str
    kind: str
    status: str
    transition_id: str | None


class SnapshotClaim(TypedDict):
    id: str
    run_id: str
    type: str
    confidence: str  # numeric, as Postgres prints it


class SnapshotRun(TypedDict):
    id: str
    agent: str
    provider: str
    simulated: bool
    parent_run_id: str | None
    input_features: list[str]
    model: NotRequired[str]  # read by the effective-support rule (else the agent)


class SnapshotExposure(TypedDict):
    id: str
    run_id: str
    exposed_to_run_id: str | None
    channel: str


class SnapshotCitation(TypedDict):
    id: str
    run_id: str | None
    claim_id: str | None
    evidence_id: str
    role: str


class SnapshotEvidence(TypedDict):
    id: str
    sha256: str
    validity: str
    transition_id: str | None


class SnapshotAction(TypedDict):
    id: str
    status: str
    transition_id: str | None


class SnapshotConsolidation(TypedDict):
    """A rival's live consolidation, named with the transition it was read at."""

    id: str
    version_id: str
    status: str
    transition_id: str | None


class SnapshotRival(TypedDict):
    """Another alternative of the node's set, as the decision read it (format v4)."""

    logical_node_id: str
    version_id: str  # its head version then
    status: str
    status_transition_id: str | None
    claims: list[SnapshotClaim]
    runs: list[SnapshotRun]
    exposures: list[SnapshotExposure]
    citations: list[SnapshotCitation]
    consolidation: SnapshotConsolidation | None  # its node's live consolidation then, if any


class RivalIds(TypedDict):
    """The rows a rival was read from, as a v4 manifest names them (runs: those of its claims)."""

    node: str
    version: str
    transition: str | None
    claims: list[str]
    exposures: list[str]
    citations: list[str]
    consolidation: list[str | None] | None  # [id, transition id] of a live one


class SnapshotRuleSet(TypedDict):
    id: str
    sha256: str
    body: dict[str, JsonValue]


class SnapshotGrouping(TypedDict):
    id: str
    sha256: str
    params: dict[str, JsonValue]


class Snapshot(TypedDict):
    """What a decision depends on, as stored (``consolidations.snapshot``) and hashed."""

    format: str
    node: SnapshotNode
    branch: SnapshotBranch
    objective_forks: list[SnapshotBranch]
    claims: list[SnapshotClaim]
    runs: list[SnapshotRun]
    exposures: list[SnapshotExposure]
    citations: list[SnapshotCitation]
    evidence: list[SnapshotEvidence]
    pending_actions: list[SnapshotAction]
    rule_set: SnapshotRuleSet
    grouping: SnapshotGrouping
    # Read by the rules min_council_answered and min_effective_support when present.
    council: NotRequired[list[Seat]]
    correlations: NotRequired[list[PairCorrelation]]
    # Format v4, under exclusive_alternatives: the other alternatives of the node's set.
    rivals: NotRequired[list[SnapshotRival]]
