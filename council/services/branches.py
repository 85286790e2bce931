"""Use cases of branches: fork, merge, close, list."""

from __future__ import annotations

from council.domain.commands import IdRef, NewFork
from council.domain.results.graph import Branch, BranchList, Closed, Merge
from council.services.ports import UnitOfWork


def fork_branch(uow: UnitOfWork, fork: NewFork, *, actor: str) -> Branch:
    with uow() as tx:
        return tx.branches.fork(fork, actor=actor)


def merge_branch(
    uow: UnitOfWork,
    branch: IdRef,
    *,
    rationale: str,
    actor: str,
    into: IdRef | None = None,
    preferred_version: IdRef | None = None,
) -> Merge:
    with uow() as tx:
        return tx.branches.merge(
            branch, rationale=rationale, actor=actor, target=into, preferred_version=preferred_version
        )


def close_branch(uow: UnitOfWork, branch: IdRef, *, status: str, reason: str, actor: str) -> Closed:
    with uow() as tx:
        return tx.branches.close(branch, status=status, reason=reason, actor=actor)


def list_branches(uow: UnitOfWork, thread: IdRef) -> BranchList:
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        return BranchList(items=tx.branches.of_thread(thread_id))
