"""The ledger's listings (council/sql/lists.sql): one named query each, on the psycopg
connection under the unit's transaction, rows typed at the boundary."""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from council.domain.results.lists import (
    ActionItem,
    ClaimItem,
    ConsolidationItem,
    DispatchItem,
    EvidenceItem,
    NodeItem,
    ProposalItem,
    RunItem,
)
from council.domain.results.runs import Cost
from council.ledger.pg import Connection, Row, fetch


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
        found, truncated = self._newest(
            "list_runs", limit, thread_id=thread_id, status=status, agent=agent, dispatch_id=dispatch_id
        )
        return [RunItem.model_validate(r) for r in found], truncated

    def dispatches(
        self, *, thread_id: UUID | None = None, dispatch_id: UUID | None = None
    ) -> list[DispatchItem]:
        found = self._rows("list_dispatches", thread_id=thread_id, dispatch_id=dispatch_id)
        return [_dispatch(r) for r in found]

    def proposals(self, *, thread_id: UUID | None, status: str | None) -> list[ProposalItem]:
        found = self._rows("list_proposals", thread_id=thread_id, status=status)
        return [ProposalItem.model_validate(r) for r in found]

    def consolidations(
        self, *, thread_id: UUID | None, status: str | None, logical_node_id: UUID | None, limit: int
    ) -> tuple[list[ConsolidationItem], bool]:
        found = self._newest(
            "list_consolidations", limit, thread_id=thread_id, status=status, logical_node_id=logical_node_id
        )
        return [ConsolidationItem.model_validate(r) for r in found[0]], found[1]

    def claims(
        self,
        *,
        run_id: UUID | None,
        node_version_id: UUID | None,
        thread_id: UUID | None,
        claim_type: str | None,
        limit: int,
    ) -> tuple[list[ClaimItem], bool]:
        found = self._newest(
            "list_claims",
            limit,
            run_id=run_id,
            node_version_id=node_version_id,
            thread_id=thread_id,
            claim_type=claim_type,
        )
        return [ClaimItem.model_validate(r) for r in found[0]], found[1]

    def actions(
        self, *, thread_id: UUID | None, status: str | None, node_version_id: UUID | None, limit: int
    ) -> tuple[list[ActionItem], bool]:
        found = self._newest(
            "list_actions", limit, thread_id=thread_id, status=status, node_version_id=node_version_id
        )
        return [ActionItem.model_validate(r) for r in found[0]], found[1]

    def _newest(self, name: str, limit: int, **params: object) -> tuple[list[Mapping[str, object]], bool]:
        """The newest ``limit`` rows, oldest first, and whether more passed (the query reads
        one more than the limit: the oldest)."""
        found = self._rows(name, limit=limit, **params)
        truncated = len(found) > limit
        return (found[1:] if truncated else found), truncated

    def _rows(self, name: str, **params: object) -> list[Mapping[str, object]]:
        return list(fetch(self.conn, name, Row, screen=False, **params))  # reads: nothing to screen


def _dispatch(row: Mapping[str, object]) -> DispatchItem:
    cost = Cost(
        usd=round(float(str(row["cost_usd"])), 6),
        prompt_tokens=int(str(row["prompt_tokens"])),
        completion_tokens=int(str(row["completion_tokens"])),
        unpriced=int(str(row["unpriced"])),
    )
    return DispatchItem.model_validate({**row, "cost": cost})
