"""The reentry packet's read path: the frontier query, sized by the budget."""

from __future__ import annotations

from uuid import UUID

from council.ledger.pg import Connection, column

DEPENDENCY_DEPTH = 3


class Frontier:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def rows(self, thread_id: UUID, *, rows_cap: int) -> dict[str, object]:
        """Everything the packet may show, in one recursive statement that fetches
        at most ``rows_cap`` items of each section (load lazily: the budget bounds it)."""
        [found] = column(
            self._conn,
            "frontier",
            dict,
            thread_id=thread_id,
            head_limit=rows_cap,
            dep_depth=DEPENDENCY_DEPTH,
            dep_limit=rows_cap,
            counter_limit=rows_cap,
            action_limit=rows_cap,
            memory_limit=rows_cap,
            evidence_limit=rows_cap,
        )
        return found  # the one JSON column, already a dict
