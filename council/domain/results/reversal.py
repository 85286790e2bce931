"""Evidence validity and its reassessment, as `council evidence challenge |
invalidate | reaffirm` and the API return them."""

from __future__ import annotations

from uuid import UUID

from pydantic import Field

from council.domain.results.base import Result


class Reassessed(Result):
    consolidation_id: UUID
    node_version_id: UUID
    memory_item_id: UUID
    material: bool | None
    proposal_id: UUID | None
    memory_status: str


class CascadeHandOn(Result):
    """How far the bounded cascade went in this command, and what it handed on."""

    reached: int
    marked_provisional: int
    steps: int
    continuation: list[tuple[UUID, int]]
    continuation_id: UUID | None
    continuation_queued: bool


class ValidityChanged(Result):
    id: UUID
    validity: str
    affected: list[Reassessed]
    proposals: list[UUID]
    cascade: CascadeHandOn


class Reverified(Result):
    """A re-verification pass: the memory it re-verified, the review dispatches it
    created, the proposals it found no reviewer for (left for a manual review;
    the event ``retraction.review_unstaffed`` says why), and those whose review the
    thread's budget refused (likewise; ``retraction.review_unfunded``)."""

    reverified: list[Reassessed]
    dispatched: list[UUID]
    unstaffed: list[UUID] = Field(default_factory=list)
    unfunded: list[UUID] = Field(default_factory=list)


class CascadeStep(Result):
    """One bounded step of a cascade: the continuations it took, how far it reached,
    and what it cut off (recorded as ``continuation_id`` when anything was)."""

    continued: list[UUID]
    reached: int
    marked_provisional: int
    continuation: list[tuple[UUID, int]]
    continuation_id: UUID | None
