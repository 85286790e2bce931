"""The shared briefing of each round of a dispatch (migration 0039; docs/architecture.md §7,
simultaneous rounds): stored once when the round opens, by the SHA-256 of its canonical
JSON, and read by every run of the round to compile its request. Rows are immutable.
Named SQL: council/sql/round_briefings.sql.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TypedDict
from uuid import UUID

from council.domain.protocol import to_judge
from council.domain.round_briefing import RoundBriefing
from council.ledger.pg import Connection, column, fetch, fetch_one


class _Stored(TypedDict):
    sha256: str
    body: dict[str, object]


@dataclass(frozen=True)
class DispatchFacts:
    """What opening a round needs to know of its dispatch."""

    thread_id: UUID
    mode: str
    proposal_id: UUID | None


class RoundBriefings:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def store(self, dispatch_id: UUID, round_no: int, briefing: RoundBriefing) -> bool:
        """Store ``briefing`` as round ``round_no``'s (False: the round had one already,
        which stays; read it with :meth:`of_round`)."""
        stored = column(
            self._conn,
            "store_round_briefing",
            str,
            dispatch_id=dispatch_id,
            round=round_no,
            sha256=briefing.sha256,
            body=json.dumps(briefing.document(), ensure_ascii=False),
        )
        return bool(stored)

    def of_round(self, dispatch_id: UUID, round_no: int) -> RoundBriefing | None:
        """The shared briefing of the dispatch's round (None: not stored, a round opened
        before revision 0039)."""
        found = fetch_one(self._conn, "round_briefing", _Stored, dispatch_id=dispatch_id, round=round_no)
        return None if found is None else RoundBriefing.model_validate(found["body"])

    def lineage_versions(self, run_id: UUID) -> list[UUID]:
        """The node versions the run's own lineage (its ancestors) made."""
        return column(self._conn, "lineage_versions", UUID, run_id=run_id)

    def to_judge(self, run_id: UUID, dispatch_id: UUID, round_no: int) -> list[UUID]:
        """The propositions a council's cross-review run must judge: those its round showed
        that its own lineage did not make (``council.domain.protocol.to_judge``)."""
        shown = column(self._conn, "round_heads", str, dispatch_id=dispatch_id, round=round_no)
        own = [str(v) for v in self.lineage_versions(run_id)]
        return [UUID(v) for v in to_judge(shown, own)]

    def dispatch(self, dispatch_id: UUID) -> DispatchFacts:
        [found] = fetch(self._conn, "dispatch_round_facts", DispatchFacts, dispatch_id=dispatch_id)
        return found
