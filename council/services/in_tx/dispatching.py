"""A dispatch created in the caller's transaction: its first round opened (its shared
briefing stored: docs/architecture.md §7, simultaneous rounds) and, under a budget, its
reservation taken in the same transaction, under the thread's budget lock, before the runs
exist (council.services.dispatch sends them once it commits; `ask` creates its thread,
evidence and dispatch in one transaction, so a refused budget writes nothing)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from uuid import UUID

from council.domain.commands import IdRef
from council.domain.profile import Profile
from council.domain.results.budgets import Reservation
from council.domain.reviewers import Reviewers
from council.services.in_tx import budget
from council.services.in_tx.briefing import round_briefing
from council.services.ports import Tx


@dataclass(frozen=True)
class Made:
    """A created (or found) dispatch and the runs still to enqueue."""

    dispatch_id: UUID
    run_ids: list[UUID]
    to_send: list[UUID]
    already: bool
    replayed: bool
    key: str | None
    mode: str
    rounds: int
    reservation: Reservation | None
    controls: bool = False


def create_in(
    tx: Tx,
    thread_id: UUID,
    profiles: Sequence[Profile],
    *,
    mode: str,
    rounds: int,
    actor: str,
    proposal: IdRef | None = None,
    once_per_proposal: bool = False,
    reviewers: Reviewers | None = None,
    key: str | None = None,
    dispatch_budget: Decimal | None = None,
    controls: bool = False,
    simulation: str = "auto",
) -> Made:
    proposal_id = tx.resolve("retraction proposal", proposal) if proposal is not None else None
    # The first round opens with the dispatch: its shared briefing is the thread as it stands in
    # this transaction (what a budget estimates, what every first-round run is compiled from).
    shared = round_briefing(tx, thread_id, mode=mode, proposal_id=proposal_id)
    planned = budget.plan(
        tx,
        thread_id,
        profiles,
        mode=mode,
        rounds=rounds,
        proposal_id=proposal_id,
        dispatch_budget=dispatch_budget,
        controls=controls,
        shared=shared,
    )
    dispatch_id, run_ids, already = tx.runs.create_dispatch(
        thread_id=thread_id,
        profiles=profiles,
        mode=mode,
        rounds=rounds,
        actor=actor,
        proposal_id=proposal_id,
        once_per_proposal=once_per_proposal,
        reviewers=reviewers,
        key=key,
        controls=controls,
        budget_usd=dispatch_budget,
        simulation=simulation,
    )
    replayed = already and key is not None
    if not already:
        tx.rounds.store(dispatch_id, 1, shared)
    reservation = budget.reserve(tx, dispatch_id, planned) if planned is not None and not already else None
    # A retry sends again what is still waiting (coalesced: never twice).
    to_send = tx.runs.waiting_of_dispatch(dispatch_id) if replayed else run_ids
    return Made(dispatch_id, run_ids, to_send, already, replayed, key, mode, rounds, reservation, controls)
