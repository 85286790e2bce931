"""Reading what the council's record teaches: stance changes and calibration,
from the dashboard views of migration 0012 (which read the core tables alone)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Connection, text


class Learning:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def stance_changes(self, thread_id: UUID) -> list[dict[str, Any]]:
        """The rows of ``council_v_stance_changes`` for a thread, oldest claim first."""
        rows = self._conn.execute(
            text(
                "SELECT * FROM council_v_stance_changes WHERE thread_id = :thread_id "
                "ORDER BY created_at, claim_id"
            ),
            {"thread_id": thread_id},
        ).mappings()
        return [dict(row) for row in rows]

    def claim_outcomes(self, thread_id: UUID | None) -> list[dict[str, Any]]:
        """The rows of ``council_v_claim_outcomes`` (of one thread when given)."""
        rows = self._conn.execute(
            text(
                "SELECT model, provider, claim_type, confidence, outcome FROM council_v_claim_outcomes "
                "WHERE CAST(:thread_id AS uuid) IS NULL OR thread_id = CAST(:thread_id AS uuid) "
                "ORDER BY model, provider, claim_id"
            ),
            {"thread_id": thread_id},
        ).mappings()
        return [dict(row) for row in rows]
