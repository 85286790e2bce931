"""Use cases of the reasoning graph's nodes: add, revise, move, show."""

from __future__ import annotations

from council.domain.commands import IdRef, NewNode, NewVersion
from council.domain.results.graph import StatusChanged, VersionCreated, VersionShown
from council.services.ports import UnitOfWork


def add_node(uow: UnitOfWork, node: NewNode, *, actor: str) -> VersionCreated:
    """A logical node and its first version (originated by its run, if it names one)."""
    with uow() as tx:
        return tx.nodes.add(node, actor=actor)


def add_version(uow: UnitOfWork, version: NewVersion, *, actor: str) -> VersionCreated:
    """A new immutable version of a logical node (content never changes in place)."""
    with uow() as tx:
        return tx.nodes.add_version(version, actor=actor)


def set_node_status(
    uow: UnitOfWork, version: IdRef, *, status: str, reason: str, actor: str
) -> StatusChanged:
    """An appended status transition: open, tentative or killed (`resolved` is the committer's)."""
    with uow() as tx:
        return tx.nodes.set_status(version, status=status, reason=reason, actor=actor)


def show_node(uow: UnitOfWork, version: IdRef) -> VersionShown:
    with uow() as tx:
        return tx.nodes.show(tx.resolve("node version", version))
