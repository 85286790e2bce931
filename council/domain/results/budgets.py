"""Budgets: what `council thread budget`, `thread show`, `dispatch --budget-usd` and `ask`
report about a thread's budget and a dispatch's reservation (docs/guide/budgets.md)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from uuid import UUID

from pydantic import field_validator

from council.domain.results.base import Result


def money(value: Decimal | float | None) -> float | None:
    """An amount as the results report it: a float to the micro-dollar (the ledger stores numeric)."""
    return None if value is None else round(float(value), 6)


class BudgetState(Result):
    """A thread's budget as it stands: ``usd`` the budget in force (None: none), ``spent_usd``
    what its runs were billed (a failed run's calls included), ``reserved_usd`` what its
    dispatches hold for runs not yet ended, ``remaining_usd`` the budget less both (None
    without a budget)."""

    usd: float | None
    spent_usd: float
    reserved_usd: float
    remaining_usd: float | None


class BudgetSetting(Result):
    """One change of a thread's budget (``usd`` None: the budget was removed)."""

    usd: float | None
    reason: str
    actor: str
    set_at: datetime

    @field_validator("usd", mode="before")
    @classmethod
    def _rounded(cls, usd: Decimal | float | None) -> float | None:
        return money(usd)  # as the ledger's numeric reads


class ThreadBudget(Result):
    """A thread's budget in force, what is spent and reserved, and every change, oldest first."""

    thread_id: UUID
    state: BudgetState
    history: list[BudgetSetting]


class AgentReservation(Result):
    """What a dispatch reserved for one agent: ``runs`` (one per round) at ``run_usd`` each,
    estimated at ``model``'s price from ``prompt_tokens`` (a run's compiled prompt by the
    model's tokenizer, with what later rounds are shown, averaged over its runs) and
    ``max_output_tokens`` (the answer each run is reserved for: the profile's
    ``expected_output_tokens``, else its ``params.max_tokens``, else 4096)."""

    agent: str
    model: str
    runs: int
    prompt_tokens: int
    max_output_tokens: int
    run_usd: float


class Reservation(Result):
    """A dispatch's reservation, taken before its runs were enqueued: ``usd`` in all, under
    ``budget_usd`` (the dispatch's own, if given) and the thread's budget state after it
    (read back after the runs, as `ask` does: the state then)."""

    usd: float
    budget_usd: float | None
    agents: list[AgentReservation]
    thread: BudgetState
