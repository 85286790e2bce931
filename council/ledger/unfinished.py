"""Work that was created but never finished, found from the ledger alone (the
sweep's reads; docs/architecture.md §7, Delivery). Each read is bounded and oldest first;
``settle_s`` leaves alone work whose message is normally still on its way."""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID

from council.ledger.commit_rows import AffectedConsolidation
from council.ledger.pg import Connection, column, fetch


class _DueRound(TypedDict):
    dispatch_id: UUID
    next_round: int
    mode: str


class Unfinished:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def runs(self, *, settle_s: float, limit: int) -> list[UUID]:
        """Runs to enqueue again: created or queued for ``settle_s``, or running on an
        expired lease (marks created ones queued)."""
        return column(self._conn, "sweep_runs", UUID, stale_s=settle_s, limit=limit)

    def evaluations(self, *, settle_s: float, limit: int) -> list[UUID]:
        """Open or tentative heads with claims that no evaluation or consolidation of them saw."""
        return column(self._conn, "unevaluated_versions", UUID, settle_s=settle_s, limit=limit)

    def cascades(self, *, settle_s: float, limit: int) -> list[UUID]:
        """Cascade continuations no step continued."""
        return column(self._conn, "unfinished_continuations", UUID, settle_s=settle_s, limit=limit)

    def reassessments(self, *, settle_s: float, limit: int) -> list[AffectedConsolidation]:
        """Live consolidations whose memory is still stable though evidence they rest
        on fell: a validity change whose reassessment never ran."""
        return fetch(
            self._conn, "unreassessed_consolidations", AffectedConsolidation, settle_s=settle_s, limit=limit
        )

    def next_rounds(self, *, settle_s: float, limit: int) -> list[tuple[UUID, int, str]]:
        """Dispatches whose next round is due but was never created: (dispatch, round, mode)."""
        rows = fetch(self._conn, "stalled_dispatches", _DueRound, settle_s=settle_s, limit=limit)
        return [(row["dispatch_id"], int(row["next_round"]), row["mode"]) for row in rows]

    def adjudications(self, *, settle_s: float, limit: int) -> list[UUID]:
        """Open proposals whose review dispatch ended."""
        return column(self._conn, "reviewed_open_proposals", UUID, settle_s=settle_s, limit=limit)
