"""Use cases of threads and their event log.

`council thread list --json` is started by scripts in loops: this module imports
at start only what listing threads needs; the other use cases import their
result types and parsers when called."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from council.domain.results.threads import ThreadList
from council.services.ports import UnitOfWork

if TYPE_CHECKING:
    from council.domain.results.events import EventList
    from council.domain.results.graph import ThreadGraph
    from council.domain.results.threads import ReviewSettings, ThreadCreated, ThreadShown
    from council.domain.tail import Settled, TailCursor, TailPage


def create_thread(
    uow: UnitOfWork, *, title: str, objective: str, actor: str, review: str = "auto"
) -> ThreadCreated:
    """Open a thread with its main branch, pinned to the default rule set and
    grouping, reviewing opened retraction proposals as ``review`` says (auto,
    manual or a delay)."""
    from council.domain.review import parse_review

    setting = parse_review(review)
    with uow() as tx:
        return tx.threads.create(title=title, objective=objective, actor=actor, review=setting)


def set_review(
    uow: UnitOfWork,
    thread: str | UUID,
    review: str | None = None,
    *,
    agents: str | None = None,
    actor: str,
    reason: str = "",
) -> ReviewSettings:
    """Change how the thread's opened retraction proposals are reviewed — ``review``
    (auto, manual or a delay) and/or who reviews them, ``agents`` (profile names,
    comma-separated, each known here; or ``thread``: the profiles that worked the
    thread) — keeping what is not given; appended to its history."""
    from dataclasses import replace

    from council.agents.profiles import resolve_many
    from council.domain.review import parse_agents, parse_review
    from council.errors import BadInput

    if review is None and agents is None:
        raise BadInput("give the review setting, the reviewers (agents), or both")
    mode = parse_review(review) if review is not None else None
    reviewers = parse_agents(agents) if agents is not None else None
    if reviewers:
        resolve_many(reviewers)  # an unknown profile is refused, naming the known ones
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        current = tx.reviews.current(thread_id)
        setting = replace(mode or current, agents=reviewers if agents is not None else current.agents)
        tx.reviews.set(thread_id, setting, actor=actor, reason=reason)
        return tx.reviews.settings(thread_id)


def review_settings(uow: UnitOfWork, thread: str | UUID) -> ReviewSettings:
    """The thread's review setting in force and its history."""
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        return tx.reviews.settings(thread_id)


def show_thread(uow: UnitOfWork, thread: str | UUID) -> ThreadShown:
    with uow() as tx:
        return tx.threads.show(tx.resolve("thread", thread))


def list_threads(uow: UnitOfWork) -> ThreadList:
    """Every thread, oldest first (a psycopg-only read: scripts start it in loops)."""
    with uow.reading() as reads:
        return ThreadList(items=reads.threads())


def list_events(
    uow: UnitOfWork, thread: str | UUID, *, after: int = 0, limit: int | None = None
) -> EventList:
    """The thread's append-only event log in order (pages with ``after``/``limit``)."""
    from council.domain.results.events import EventList

    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        return EventList(items=tx.events.of_thread(thread_id, after=after, limit=limit))


def tail_from(uow: UnitOfWork, thread: str | UUID, *, after: int | None = None) -> TailCursor:
    """Where a live reader of the thread's events starts: after the event ``after``
    (one it has seen: its settled position), or, with None, from now."""
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        return tx.events.tail_now(thread_id) if after is None else tx.events.tail_after(after)


def tail_events(uow: UnitOfWork, thread_id: UUID, cursor: TailCursor, *, limit: int = 500) -> TailPage:
    """The thread's settled events after ``cursor``, in the order a live reader sends them."""
    with uow() as tx:
        return tx.events.tail(thread_id, cursor, limit=limit)


def settled_threads(uow: UnitOfWork, since: int | None) -> Settled:
    """The threads with events settled since the horizon ``since``, and the new horizon."""
    with uow() as tx:
        return tx.events.settled_threads(since)


def thread_graph(uow: UnitOfWork, thread: str | UUID) -> ThreadGraph:
    """The thread's nodes with every version, edges, branches, consolidations and memory."""
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        return tx.graph.of_thread(thread_id)
