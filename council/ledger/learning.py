"""Reading what the council's record teaches: stance changes and calibration,
from the dashboard views of migration 0012 (which read the core tables alone);
named SQL in council/sql/learning.sql."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import TypedDict
from uuid import UUID

from council.domain.calibration import ClaimOutcome
from council.ledger.pg import Connection, fetch


class StanceChangeRow(TypedDict):
    """A row of ``council_v_stance_changes`` (schema/views.md)."""

    thread_id: UUID
    node_version_id: UUID
    claim_id: UUID
    run_id: UUID
    agent: str
    model: str
    provider: str
    round: int
    claim_type: str
    confidence: Decimal
    created_at: datetime
    prior_claim_id: UUID | None
    prior_run_id: UUID | None
    prior_claim_type: str | None
    prior_confidence: Decimal | None
    prior_created_at: datetime | None
    exposed_stances: int
    exposed_mean_position: Decimal | None
    exposed_claim_types: list[str] | None
    new_evidence: int
    invalidated_evidence: int
    control_run_id: UUID | None  # its control run (dispatch --controls), if any
    control_claim_type: str | None  # that control run's claim on the version


class Learning:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def stance_changes(self, thread_id: UUID) -> list[StanceChangeRow]:
        """The rows of ``council_v_stance_changes`` for a thread, oldest claim first."""
        return fetch(self._conn, "stance_changes", StanceChangeRow, thread_id=thread_id)

    def claim_outcomes(self, thread_id: UUID | None) -> list[ClaimOutcome]:
        """The rows of ``council_v_claim_outcomes`` (of one thread when given)."""
        return fetch(self._conn, "claim_outcomes", ClaimOutcome, thread_id=thread_id)
