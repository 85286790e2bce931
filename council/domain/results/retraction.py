"""Retraction proposals, votes and adjudication, as `council retraction …` returns them."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import Field

from council.domain.results.base import Result, Row
from council.domain.results.consolidation import GroupShape


class Proposal(Row):
    id: UUID
    thread_id: UUID
    consolidation_id: UUID
    reason: str
    rule_set_id: str
    grouping_algorithm_id: str
    opened_by: str
    status: str
    status_changed_at: datetime
    created_at: datetime


class Vote(Row):
    id: UUID
    proposal_id: UUID
    run_id: UUID
    vote: str
    confidence: float
    rationale: str
    created_at: datetime


class Adjudicated(Result):
    """``outcome``: retracted | restored | superseded | pending; for a proposal decided
    earlier, its decision and ``already_adjudicated``; ``restored_retraction`` when
    this adjudication undid the proposal's earlier retraction (``--restore``)."""

    proposal_id: UUID
    consolidation_id: UUID
    outcome: str
    already_adjudicated: bool
    retract_groups: int | None = None
    keep_groups: int | None = None
    required: int | None = None
    groups: list[GroupShape] | None = None
    rule_set_id: str | None = None
    grouping_algorithm_id: str | None = None
    restored_retraction: bool = False
    # retracted: the heads of the consolidated node's rivals (exclusive_alternatives), whose
    # decisions it blocked; the workers queue their evaluation (by hand: `council consolidate`)
    rivals_due: list[UUID] = Field(default_factory=list)
