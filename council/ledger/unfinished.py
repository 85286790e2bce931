"""Work that was created but never finished, found from the ledger alone (the
sweep's reads; docs/architecture.md §7, Delivery). Each read is bounded and oldest first;
``settle_s`` leaves alone work whose message is normally still on its way."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Connection

from council.sql import query


class Unfinished:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def runs(self, *, settle_s: float, limit: int) -> list[UUID]:
        """Runs to enqueue again: created or queued for ``settle_s``, or running on an
        expired lease (marks created ones queued)."""
        return [r[0] for r in self._conn.execute(query("sweep_runs"), {"stale_s": settle_s, "limit": limit})]

    def evaluations(self, *, settle_s: float, limit: int) -> list[UUID]:
        """Open or tentative heads with claims that no evaluation or consolidation of them saw."""
        rows = self._conn.execute(query("unevaluated_versions"), {"settle_s": settle_s, "limit": limit})
        return [UUID(str(row.id)) for row in rows]

    def cascades(self, *, settle_s: float, limit: int) -> list[UUID]:
        """Cascade continuations no step continued."""
        rows = self._conn.execute(query("unfinished_continuations"), {"settle_s": settle_s, "limit": limit})
        return [UUID(str(row.id)) for row in rows]

    def reassessments(self, *, settle_s: float, limit: int) -> list[dict[str, Any]]:
        """Live consolidations whose memory is still stable though evidence they rest
        on fell: a validity change whose reassessment never ran."""
        found = self._conn.execute(
            query("unreassessed_consolidations"), {"settle_s": settle_s, "limit": limit}
        )
        return [dict(r) for r in found.mappings()]

    def next_rounds(self, *, settle_s: float, limit: int) -> list[tuple[UUID, int]]:
        """Deliberative dispatches whose next round is due but was never created."""
        rows = self._conn.execute(query("stalled_dispatches"), {"settle_s": settle_s, "limit": limit})
        return [(UUID(str(row.dispatch_id)), int(row.next_round)) for row in rows]

    def adjudications(self, *, settle_s: float, limit: int) -> list[UUID]:
        """Open proposals whose review dispatch ended."""
        rows = self._conn.execute(query("reviewed_open_proposals"), {"settle_s": settle_s, "limit": limit})
        return [UUID(str(row.id)) for row in rows]
