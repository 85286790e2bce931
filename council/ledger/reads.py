"""The reads of ``UnitOfWork.reading``: each is one named query of council/sql/reads.sql,
on whichever connection the unit gives — its own in a CLI start (no pool opened), a
pooled one in a worker or the web app."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict
from uuid import UUID

from council.domain.results.threads import ThreadListed
from council.ledger.pg import Connection, fetch


class ThreadRow(TypedDict):
    id: UUID
    title: str
    objective: str
    rule_set_id: str
    grouping_algorithm_id: str
    created_at: datetime
    runs: int
    runs_in_flight: int
    cost_usd: float
    runs_unpriced: int
    status: str


class Reads:
    """The ledger's psycopg-only reads inside one transaction."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def threads(self) -> list[ThreadListed]:
        """Every thread, oldest first, with its status and what its runs cost."""
        return [ThreadListed.model_validate(row) for row in fetch(self._conn, "all_threads", ThreadRow)]
