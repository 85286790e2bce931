"""Use cases of stances and pending actions: a run's claim; an action and its close."""

from __future__ import annotations

from council.domain.commands import IdRef, NewAction, NewClaim
from council.domain.results.graph import Action, ClaimAdded, Closed
from council.services.ports import UnitOfWork


def add_claim(uow: UnitOfWork, run: IdRef, claim: NewClaim, *, actor: str) -> ClaimAdded:
    """One claim of a run on a node version (a run claims once per version)."""
    with uow() as tx:
        [added] = tx.claims.add(run, [claim], actor=actor)
        return added


def add_action(uow: UnitOfWork, action: NewAction, *, actor: str) -> Action:
    with uow() as tx:
        return tx.actions.add(action, actor=actor)


def close_action(uow: UnitOfWork, action: IdRef, *, status: str, reason: str, actor: str) -> Closed:
    with uow() as tx:
        return tx.actions.close(action, status=status, reason=reason, actor=actor)
