"""A thread's budget and the reservations its dispatches take (migration 0035, named SQL in
council/sql/budgets.sql; docs/guide/budgets.md). Budgets are appended rows (the latest is in
force) and reservations are never updated: what is still reserved is derived from the runs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, TypedDict
from uuid import UUID

from council.domain import validate as v
from council.domain.budget import Estimate
from council.domain.results.budgets import (
    AgentReservation,
    BudgetSetting,
    BudgetState,
    Reservation,
    ThreadBudget,
    money,
)
from council.ledger.events import append
from council.ledger.locks import lock_thread_budget
from council.ledger.pg import execute, fetch

if TYPE_CHECKING:  # events.append takes it until the events store runs named SQL
    from council.ledger.pg import Connection


class _ReservedRow(TypedDict):
    agent: str
    model: str
    runs: int
    prompt_tokens: int
    max_output_tokens: int
    run_usd: Decimal
    dispatch_budget_usd: Decimal | None


class StateRow(TypedDict):
    usd: Decimal | None
    spent_usd: Decimal
    reserved_usd: Decimal


def shown_state(row: StateRow) -> BudgetState:
    usd = row["usd"]
    remaining = None if usd is None else usd - row["spent_usd"] - row["reserved_usd"]
    return BudgetState(
        usd=money(usd),
        spent_usd=round(float(row["spent_usd"]), 6),
        reserved_usd=round(float(row["reserved_usd"]), 6),
        remaining_usd=money(remaining),
    )


class Budgets:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def lock(self, thread_id: UUID) -> None:
        """Hold the thread's budget lock to the end of the transaction."""
        lock_thread_budget(self._conn, thread_id)

    def state(self, thread_id: UUID) -> StateRow:
        [row] = fetch(self._conn, "budget_state", StateRow, thread_id=thread_id)
        return row

    def set(self, thread_id: UUID, usd: Decimal | None, *, actor: str, reason: str = "") -> None:
        """Append ``usd`` as the thread's budget in force (None removes it), with its event.
        Taken under the budget lock, so it orders with the dispatches reserving against it."""
        reason = v.text(reason, "reason", v.MAX_REASON, allow_empty=True)
        self.lock(thread_id)
        execute(
            self._conn,
            "add_thread_budget",
            thread_id=thread_id,
            usd=usd,
            reason=reason,
            actor=actor,
        )
        append(
            self._conn,
            "thread.budget_set",
            actor=actor,
            thread_id=thread_id,
            subject_id=thread_id,
            payload={"usd": None if usd is None else str(usd), "reason": reason},
        )

    def of_thread(self, thread_id: UUID) -> ThreadBudget:
        history = fetch(self._conn, "thread_budget_history", BudgetSetting, thread_id=thread_id)
        return ThreadBudget(thread_id=thread_id, state=shown_state(self.state(thread_id)), history=history)

    def reserve(
        self,
        dispatch_id: UUID,
        thread_id: UUID,
        estimates: Sequence[Estimate],
        *,
        dispatch_budget: Decimal | None,
        thread_budget: Decimal | None,
    ) -> None:
        agents = [
            {
                "agent": e.agent,
                "model": e.model,
                "runs": e.runs,
                "prompt_tokens": e.prompt_tokens,
                "max_output_tokens": e.max_output_tokens,
                "run_usd": str(e.run_usd),
            }
            for e in estimates
        ]
        fetch(
            self._conn,
            "add_reservations",
            dict,
            dispatch_id=dispatch_id,
            thread_id=thread_id,
            agents=json.dumps(agents),
            dispatch_budget_usd=dispatch_budget,
            thread_budget_usd=thread_budget,
        )

    def of_dispatch(self, dispatch_id: UUID, thread_id: UUID) -> Reservation | None:
        """What the dispatch reserved (None: it ran under no budget), with its thread's
        budget state now."""
        found = fetch(self._conn, "dispatch_reservation", _ReservedRow, dispatch_id=dispatch_id)
        if not found:
            return None
        return Reservation(
            usd=round(float(sum((r["run_usd"] * r["runs"] for r in found), Decimal(0))), 6),
            budget_usd=money(found[0]["dispatch_budget_usd"]),
            agents=[
                AgentReservation(
                    agent=r["agent"],
                    model=r["model"],
                    runs=r["runs"],
                    prompt_tokens=r["prompt_tokens"],
                    max_output_tokens=r["max_output_tokens"],
                    run_usd=float(r["run_usd"]),
                )
                for r in found
            ],
            thread=shown_state(self.state(thread_id)),
        )
