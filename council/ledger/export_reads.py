"""Reading a thread for its decision record (`council export`): every version of its
nodes, its consolidations and resolutions, its retraction proposals with their votes and
adjudications, its imported turns' rounds; named SQL in council/sql/export.sql on the unit's connection."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, TypedDict
from uuid import UUID

from council.domain.results.export import RecordResolution
from council.ledger.pg import Connection, column, fetch
from council.ledger.retraction import TransitionRow


class VersionRow(TypedDict):
    logical_node_id: UUID
    head_version_id: UUID
    version_id: UUID
    version_no: int
    parent_version_id: UUID | None
    branch_id: UUID
    content: str
    content_sha256: str
    status: str
    created_by_run_id: UUID | None
    created_at: datetime


class ConsolidationRow(TypedDict):
    id: UUID
    logical_node_id: UUID
    node_version_id: UUID
    rule_set_id: str
    grouping_algorithm_id: str
    snapshot_sha256: str
    decision: dict[str, Any]
    status: str
    status_changed_at: datetime
    created_at: datetime


class ProposalRow(TypedDict):
    id: UUID
    consolidation_id: UUID
    node_version_id: UUID
    reason: str
    rule_set_id: str
    grouping_algorithm_id: str
    opened_by: str
    status: str
    status_changed_at: datetime
    created_at: datetime


class VoteRow(TypedDict):
    id: UUID
    proposal_id: UUID
    run_id: UUID
    agent: str
    provider: str
    vote: str
    confidence: float | Decimal
    rationale: str
    created_at: datetime


class _DebateRound(TypedDict):
    run_id: UUID
    debate_round: int


class _Edge(TypedDict):
    from_version_id: UUID
    to_version_id: UUID


class ExportReads:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def imported(self, thread_id: UUID) -> bool:
        """Whether `council import` made the thread."""
        return bool(column(self._conn, "export_imported", bool, thread_id=thread_id)[0])

    def versions(self, thread_id: UUID) -> list[VersionRow]:
        return fetch(self._conn, "export_versions", VersionRow, thread_id=thread_id)

    def consolidations(self, thread_id: UUID) -> list[ConsolidationRow]:
        return fetch(self._conn, "export_consolidations", ConsolidationRow, thread_id=thread_id)

    def proposals(self, thread_id: UUID) -> list[ProposalRow]:
        return fetch(self._conn, "export_proposals", ProposalRow, thread_id=thread_id)

    def votes(self, thread_id: UUID) -> list[VoteRow]:
        return fetch(self._conn, "export_votes", VoteRow, thread_id=thread_id)

    def contradicts(self, thread_id: UUID) -> list[tuple[UUID, UUID]]:
        """(from, to) of each ``contradicts`` edge of the thread."""
        found = fetch(self._conn, "export_contradicts", _Edge, thread_id=thread_id)
        return [(e["from_version_id"], e["to_version_id"]) for e in found]

    def adjudications(self, thread_id: UUID) -> list[TransitionRow]:
        return fetch(self._conn, "export_adjudications", TransitionRow, thread_id=thread_id)

    def resolutions(self, thread_id: UUID) -> list[RecordResolution]:
        """The resolutions of the thread's node versions, oldest first."""
        return fetch(self._conn, "export_resolutions", RecordResolution, thread_id=thread_id)

    def debate_rounds(self, thread_id: UUID) -> dict[UUID, int]:
        """Each imported run of the thread: its round in the record it came from."""
        found = fetch(self._conn, "export_debate_rounds", _DebateRound, thread_id=thread_id)
        return {row["run_id"]: row["debate_round"] for row in found}
