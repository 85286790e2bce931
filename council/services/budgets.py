"""A thread's budget (`council thread budget`, `POST /threads/{id}/budget`): set, removed or
read with its history; what dispatches reserve against it is in council.services.in_tx.budget."""

from __future__ import annotations

from uuid import UUID

from council.domain.budget import budget_usd
from council.domain.results.budgets import ThreadBudget
from council.errors import BadInput
from council.services.ports import UnitOfWork


def thread_budget(uow: UnitOfWork, thread: str | UUID) -> ThreadBudget:
    """The thread's budget in force, what is spent and reserved, and its history."""
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        return tx.budgets.of_thread(thread_id)


def set_thread_budget(
    uow: UnitOfWork,
    thread: str | UUID,
    usd: float | str | None,
    *,
    clear: bool = False,
    actor: str,
    reason: str = "",
) -> ThreadBudget:
    """Set the thread's budget to ``usd`` (or remove it: ``clear``), appended to its history.
    A budget below what is already spent and reserved is taken: it refuses every later
    dispatch until runs end and release their reservations."""
    if clear == (usd is not None):
        raise BadInput("give either --usd AMOUNT or --clear")
    amount = None if clear else budget_usd(usd, "--usd")
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        tx.budgets.set(thread_id, amount, actor=actor, reason=reason)
        return tx.budgets.of_thread(thread_id)
