"""The unit of work: one transaction, and the ledger's stores bound to it.

A service opens exactly one unit per use case (more only where the design
asks for separate transactions, e.g. a cascade's later steps):

    with uow() as tx:
        change = tx.evidence.change_validity(evidence_id, ...)
        affected = tx.consolidations.resting_on(evidence_id)

The transaction commits when the block ends normally and rolls back when it
raises; driver errors leave as the project's own exceptions (``pg.translate_driver``).
Stores are plain data access over the transaction's connection: no use-case
orchestration lives in them. Each is imported when a transaction first uses
it, so a read loads no committer, runs or output applier.

A read-only use case may use ``with uow.reading() as reads`` instead
(``council.ledger.reads``). A unit made from a URL (``UnitOfWork(url=...)``, what
the bootstrap makes for one CLI command) opens its pool only when a ``uow()``
transaction first needs it, so a CLI start that only reads (`council thread list
--json`) runs its one query on a connection of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import TYPE_CHECKING
from uuid import UUID

if TYPE_CHECKING:
    from council.ledger.actions import Actions
    from council.ledger.alternatives import Alternatives
    from council.ledger.answers import Answers
    from council.ledger.apply_output import Outputs
    from council.ledger.branches import Branches
    from council.ledger.budgets import Budgets
    from council.ledger.cascade import Cascades
    from council.ledger.claims import Claims
    from council.ledger.committer import Committer
    from council.ledger.consolidations import Consolidations
    from council.ledger.db import Pool
    from council.ledger.events import Events
    from council.ledger.evidence import EvidenceStore
    from council.ledger.frontier import Frontier
    from council.ledger.graph import Graph
    from council.ledger.learning import Learning
    from council.ledger.lint import Lint
    from council.ledger.nodes import Nodes
    from council.ledger.pg import Connection
    from council.ledger.reads import Reads
    from council.ledger.retraction import Retractions
    from council.ledger.reversal import Reversal
    from council.ledger.review import ReviewStore
    from council.ledger.round_briefings import RoundBriefings
    from council.ledger.rule_sets import RuleSets
    from council.ledger.runs import Runs
    from council.ledger.threads import Threads
    from council.ledger.traces import Traces
    from council.ledger.unfinished import Unfinished


# What each kind of id names: a table with its lookup queries (council/sql/lookup.sql).
_ID_KINDS = {
    "thread": "threads",
    "evidence": "evidence",
    "node version": "node_versions",
    "logical node": "logical_nodes",
    "run": "agent_runs",
    "claim": "claims",
    "branch": "branches",
    "pending action": "pending_actions",
    "consolidation": "consolidations",
    "evaluation": "consolidation_evaluations",
    "retraction proposal": "retraction_proposals",
    "memory item": "memory_items",
    "dispatch": "dispatches",
}


class Tx:
    """The ledger inside one transaction. ``conn`` is the transaction's psycopg
    connection: the one way a store talks to Postgres, named SQL from council/sql
    with typed rows (``council.ledger.pg.fetch`` and its siblings)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def resolve(self, kind: str, value: str | UUID) -> UUID:
        """The id of a ``kind`` named whole or by a unique prefix (bad input otherwise)."""
        from council.ledger.lookup import resolve

        return resolve(self.conn, _ID_KINDS[kind], value, kind)

    @cached_property
    def threads(self) -> Threads:
        from council.ledger.threads import Threads

        return Threads(self.conn)

    @cached_property
    def events(self) -> Events:
        from council.ledger.events import Events

        return Events(self.conn)

    @cached_property
    def evidence(self) -> EvidenceStore:
        from council.ledger.evidence import EvidenceStore

        return EvidenceStore(self.conn)

    @cached_property
    def nodes(self) -> Nodes:
        from council.ledger.nodes import Nodes

        return Nodes(self.conn)

    @cached_property
    def claims(self) -> Claims:
        from council.ledger.claims import Claims

        return Claims(self.conn)

    @cached_property
    def branches(self) -> Branches:
        from council.ledger.branches import Branches

        return Branches(self.conn)

    @cached_property
    def actions(self) -> Actions:
        from council.ledger.actions import Actions

        return Actions(self.conn)

    @cached_property
    def committer(self) -> Committer:
        from council.ledger.committer import Committer

        return Committer(self.conn)

    @cached_property
    def consolidations(self) -> Consolidations:
        from council.ledger.consolidations import Consolidations

        return Consolidations(self.conn)

    @cached_property
    def retractions(self) -> Retractions:
        from council.ledger.retraction import Retractions

        return Retractions(self.conn)

    @cached_property
    def budgets(self) -> Budgets:
        from council.ledger.budgets import Budgets

        return Budgets(self.conn)

    @cached_property
    def reviews(self) -> ReviewStore:
        from council.ledger.review import ReviewStore

        return ReviewStore(self.conn)

    @cached_property
    def reversal(self) -> Reversal:
        from council.ledger.reversal import Reversal

        return Reversal(self.conn)

    @cached_property
    def cascades(self) -> Cascades:
        from council.ledger.cascade import Cascades

        return Cascades(self.conn)

    @cached_property
    def rule_sets(self) -> RuleSets:
        from council.ledger.rule_sets import RuleSets

        return RuleSets(self.conn)

    @cached_property
    def runs(self) -> Runs:
        from council.ledger.runs import Runs

        return Runs(self.conn)

    @cached_property
    def outputs(self) -> Outputs:
        from council.ledger.apply_output import Outputs

        return Outputs(self.conn)

    @cached_property
    def unfinished(self) -> Unfinished:
        from council.ledger.unfinished import Unfinished

        return Unfinished(self.conn)

    @cached_property
    def graph(self) -> Graph:
        from council.ledger.graph import Graph

        return Graph(self.conn)

    @cached_property
    def alternatives(self) -> Alternatives:
        from council.ledger.alternatives import Alternatives

        return Alternatives(self.conn)

    @cached_property
    def frontier(self) -> Frontier:
        from council.ledger.frontier import Frontier

        return Frontier(self.conn)

    @cached_property
    def answers(self) -> Answers:
        from council.ledger.answers import Answers

        return Answers(self.conn)

    @cached_property
    def traces(self) -> Traces:
        from council.ledger.traces import Traces

        return Traces(self.conn)

    @cached_property
    def learning(self) -> Learning:
        from council.ledger.learning import Learning

        return Learning(self.conn)

    @cached_property
    def lint(self) -> Lint:
        from council.ledger.lint import Lint

        return Lint(self.conn)

    @cached_property
    def rounds(self) -> RoundBriefings:
        from council.ledger.round_briefings import RoundBriefings

        return RoundBriefings(self.conn)


class UnitOfWork:
    """Opens one READ COMMITTED transaction per ``with uow() as tx`` (and one read per
    ``with uow.reading() as reads``). Made from a pool, or from a database URL whose
    pool is opened when first needed."""

    def __init__(self, pool: Pool | None = None, *, url: str | None = None) -> None:
        if (pool is None) == (url is None):
            raise TypeError("UnitOfWork takes a pool or a url")
        self._pool = pool
        self._url = url

    @property
    def pool(self) -> Pool:
        if self._pool is None:
            from council.ledger.db import pool_for

            assert self._url is not None
            self._pool = pool_for(self._url)
        return self._pool

    @contextmanager
    def __call__(self) -> Iterator[Tx]:
        from council.ledger.db import unit_of_work

        with unit_of_work(self.pool) as conn:
            yield Tx(conn)

    @contextmanager
    def reading(self) -> Iterator[Reads]:
        """One READ COMMITTED transaction for the reads: on a pooled connection once
        this process has its pool (a worker, the web app), else on a connection of its
        own (a CLI start)."""
        from council.ledger import pg
        from council.ledger.reads import Reads

        if self._pool is None:
            assert self._url is not None
            with pg.transaction(self._url) as own:
                yield Reads(own)
            return
        with self() as tx:
            yield Reads(tx.conn)
