"""Learning from the record: counterfactual replay, rule sets and their provenance,
stance changes and calibration, as the commands and routes that read them return them."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import RootModel

from council.domain.results.base import Document, Result, Row
from council.domain.results.consolidation import Replayed, RuleReason


class ChangedDecision(Result):
    """A stored decision that the candidate rule set would decide otherwise."""

    id: UUID  # the consolidation or evaluation id
    kind: str  # consolidation | evaluation
    node_version_id: UUID
    thread_id: UUID
    stored_outcome: str  # consolidate | not_ready
    counterfactual_outcome: str
    rules_changed: list[str]
    stored_reasons: list[RuleReason]
    counterfactual_reasons: list[RuleReason]


class Counterfactual(Result):
    """``council replay --rule-set``: which stored decisions another rule set would change.

    ``not_reproduced`` names decisions whose rebuilt snapshot did not hash to the
    stored digest or whose pinned rules no longer give the stored outcome (see
    ``council replay ID``); they are left out of ``changed``. ``report_sha256`` is
    the digest of everything above it, which a stored rule set's provenance names.
    """

    rule_set_id: str
    rule_set_sha256: str
    body: Document
    thread_id: UUID | None
    since: datetime | None
    compared: int
    reproduced: int
    changed: list[ChangedDecision]
    not_reproduced: list[UUID]
    report_sha256: str


class ReplayReport(RootModel[Replayed | Counterfactual]):
    """What ``council replay`` prints: one decision replayed, or a counterfactual report."""


class RuleSetProvenance(Row):
    report_sha256: str
    thread_id: UUID | None
    since: datetime | None
    compared: int
    changed: list[UUID]
    recorded_at: datetime


class RuleSetShown(Row):
    id: str
    body: Document
    body_sha256: str
    description: str
    created_at: datetime
    provenance: RuleSetProvenance | None
    pinned: bool


class RuleSetStored(Result):
    """``council rule-set add``: the stored rule set (``created`` false when it was
    already stored with the same body) and whether it is now pinned for new threads."""

    rule_set: RuleSetShown
    created: bool


class RuleSetList(Result):
    rule_sets: list[RuleSetShown]
    pinned_for_new_threads: str


class StanceChange(Row):
    """One claim set beside the stance before it (``council_v_stance_changes``)."""

    thread_id: UUID
    node_version_id: UUID
    claim_id: UUID
    run_id: UUID
    agent: str
    model: str
    provider: str
    round: int
    claim_type: str
    confidence: float
    prior_claim_id: UUID | None
    prior_run_id: UUID | None
    prior_claim_type: str | None
    prior_confidence: float | None
    exposed_stances: int
    exposed_claim_types: list[str]
    new_evidence: int
    invalidated_evidence: int
    change_class: str
    created_at: datetime
    # Its control run (dispatch --controls) and that run's claim on the version, if any.
    control_run_id: UUID | None = None
    control_claim_type: str | None = None


class StancesShown(Result):
    """``council stances``: every stance change in a thread and how many of each class."""

    thread_id: UUID
    counts: dict[str, int]
    changes: list[StanceChange]


class ReliabilityBucket(Result):
    low: float
    high: float
    resolved: int
    mean_confidence: float | None
    right_share: float | None


class ModelCalibrationShown(Result):
    model: str
    provider: str
    endorsements: int
    endorsements_live: int
    endorsements_superseded: int
    endorsements_retracted: int
    disputes: int
    disputes_vindicated: int
    resolved: int
    right: int
    brier: float | None
    reliability: list[ReliabilityBucket]


class CalibrationShown(Result):
    """``council calibration``: per model and provider family, what became of its claims."""

    thread_id: UUID | None
    models: list[ModelCalibrationShown]
