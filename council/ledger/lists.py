"""The ledger's listings (council/sql/lists.sql): one named query each, on the psycopg
connection under the unit's transaction, rows typed at the boundary."""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from sqlalchemy import Connection

from council.domain.results.lists import DispatchItem, EvidenceItem, NodeItem, ProposalItem, RunItem
from council.domain.results.runs import Cost
from council.ledger.pg import in_transaction


class Lists:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def evidence(self, thread_id: UUID) -> list[EvidenceItem]:
        return [EvidenceItem.model_validate(r) for r in self._rows("list_evidence", thread_id=thread_id)]

    def nodes(self, thread_id: UUID) -> list[NodeItem]:
        return [NodeItem.model_validate(r) for r in self._rows("list_nodes", thread_id=thread_id)]

    def runs(
        self,
        *,
        thread_id: UUID | None = None,
        status: str | None = None,
        agent: str | None = None,
        dispatch_id: UUID | None = None,
        limit: int,
    ) -> tuple[list[RunItem], bool]:
        """The newest ``limit`` runs passing the filters, oldest first, and whether more passed."""
        found = self._rows(
            "list_runs", thread_id=thread_id, status=status, agent=agent, dispatch_id=dispatch_id, limit=limit
        )
        truncated = len(found) > limit  # the query reads one more than the limit: the oldest
        return [RunItem.model_validate(r) for r in (found[1:] if truncated else found)], truncated

    def dispatches(
        self, *, thread_id: UUID | None = None, dispatch_id: UUID | None = None
    ) -> list[DispatchItem]:
        found = self._rows("list_dispatches", thread_id=thread_id, dispatch_id=dispatch_id)
        return [_dispatch(r) for r in found]

    def proposals(self, *, thread_id: UUID | None, status: str | None) -> list[ProposalItem]:
        found = self._rows("list_proposals", thread_id=thread_id, status=status)
        return [ProposalItem.model_validate(r) for r in found]

    def _rows(self, name: str, **params: object) -> list[Mapping[str, object]]:
        found: list[Mapping[str, object]] = in_transaction(self.conn, name, dict(params))
        return found


def _dispatch(row: Mapping[str, object]) -> DispatchItem:
    cost = Cost(
        usd=round(float(str(row["cost_usd"])), 6),
        prompt_tokens=int(str(row["prompt_tokens"])),
        completion_tokens=int(str(row["completion_tokens"])),
        unpriced=int(str(row["unpriced"])),
    )
    return DispatchItem.model_validate({**row, "cost": cost})
