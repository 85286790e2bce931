"""A unit of work with in-memory stores, for orchestration tests (cosmicpython's
FakeUnitOfWork): the services' sequencing — what they write in which
transaction, what they hand the scheduler, what they retry — without Postgres.
Correctness of the ledger itself is tested on real Postgres everywhere else.

A fake transaction commits when its block ends normally and rolls back when
it raises, like the real one; ``log`` records both, in order, with every store
call made inside, so a test can say which calls shared a transaction.

It implements ``council.services.ports.UnitOfWork`` (and ``Tx``) explicitly and is
type-checked (``[tool.mypy] modules``): a store the services use that the fake lacks, or
a changed signature of ``resolve``/``reading``, fails mypy. A test hands in only the
stores its service touches; any other raises AttributeError when used.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast
from uuid import UUID

from council.services.ports import Tx, UnitOfWork

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


class NoBudget:
    """The budgets of a thread that has none: the lock is taken, nothing is reserved."""

    def lock(self, thread_id: UUID) -> None:
        pass

    def state(self, thread_id: UUID) -> dict[str, object]:
        return {"usd": None, "spent_usd": 0, "reserved_usd": 0}


class FakeTx:
    """One fake transaction: each store property answers the test's fake store, recording calls."""

    def __init__(self, stores: dict[str, object]) -> None:
        self.stores = stores
        self.calls: list[str] = []

    def _store(self, name: str) -> Any:
        if name not in self.stores:
            raise AttributeError(f"the fake unit of work has no store {name!r}")
        return _Recording(self.stores[name], name, self.calls)

    @property
    def conn(self) -> Connection:
        raise AttributeError("the fake unit of work has no connection")

    def resolve(self, kind: str, value: str | UUID) -> UUID:
        self.calls.append(f"resolve {kind}")
        return cast(UUID, value)

    @property
    def threads(self) -> Threads:
        return cast("Threads", self._store("threads"))

    @property
    def events(self) -> Events:
        return cast("Events", self._store("events"))

    @property
    def evidence(self) -> EvidenceStore:
        return cast("EvidenceStore", self._store("evidence"))

    @property
    def nodes(self) -> Nodes:
        return cast("Nodes", self._store("nodes"))

    @property
    def claims(self) -> Claims:
        return cast("Claims", self._store("claims"))

    @property
    def branches(self) -> Branches:
        return cast("Branches", self._store("branches"))

    @property
    def actions(self) -> Actions:
        return cast("Actions", self._store("actions"))

    @property
    def committer(self) -> Committer:
        return cast("Committer", self._store("committer"))

    @property
    def consolidations(self) -> Consolidations:
        return cast("Consolidations", self._store("consolidations"))

    @property
    def retractions(self) -> Retractions:
        return cast("Retractions", self._store("retractions"))

    @property
    def budgets(self) -> Budgets:
        # A thread without a budget unless the test gives a budgets store.
        return cast("Budgets", self._store("budgets") if "budgets" in self.stores else NoBudget())

    @property
    def reviews(self) -> ReviewStore:
        return cast("ReviewStore", self._store("reviews"))

    @property
    def reversal(self) -> Reversal:
        return cast("Reversal", self._store("reversal"))

    @property
    def cascades(self) -> Cascades:
        return cast("Cascades", self._store("cascades"))

    @property
    def rule_sets(self) -> RuleSets:
        return cast("RuleSets", self._store("rule_sets"))

    @property
    def runs(self) -> Runs:
        return cast("Runs", self._store("runs"))

    @property
    def outputs(self) -> Outputs:
        return cast("Outputs", self._store("outputs"))

    @property
    def unfinished(self) -> Unfinished:
        return cast("Unfinished", self._store("unfinished"))

    @property
    def graph(self) -> Graph:
        return cast("Graph", self._store("graph"))

    @property
    def alternatives(self) -> Alternatives:
        return cast("Alternatives", self._store("alternatives"))

    @property
    def frontier(self) -> Frontier:
        return cast("Frontier", self._store("frontier"))

    @property
    def answers(self) -> Answers:
        return cast("Answers", self._store("answers"))

    @property
    def traces(self) -> Traces:
        return cast("Traces", self._store("traces"))

    @property
    def learning(self) -> Learning:
        return cast("Learning", self._store("learning"))

    @property
    def lint(self) -> Lint:
        return cast("Lint", self._store("lint"))

    @property
    def rounds(self) -> RoundBriefings:
        return cast("RoundBriefings", self._store("rounds"))


class _Recording:
    """Forwards to a fake store, noting each call as ``store.method``."""

    def __init__(self, store: object, name: str, calls: list[str]) -> None:
        self._store, self._name, self._calls = store, name, calls

    def __getattr__(self, method: str) -> Any:
        target = getattr(self._store, method)

        def call(*args: Any, **kwargs: Any) -> Any:
            self._calls.append(f"{self._name}.{method}")
            return target(*args, **kwargs)

        return call


class FakeUnitOfWork:
    def __init__(self, **stores: object) -> None:
        self.stores = stores
        self.log: list[tuple[str, list[str]]] = []  # (committed | rolled back, calls)

    @contextmanager
    def __call__(self) -> Iterator[Tx]:
        tx = FakeTx(self.stores)
        try:
            yield tx
        except BaseException:
            self.log.append(("rolled back", tx.calls))
            raise
        self.log.append(("committed", tx.calls))

    @contextmanager
    def reading(self) -> Iterator[Reads]:
        """A read, from the test's ``reads`` store (recorded as its own transaction)."""
        tx = FakeTx(self.stores)
        yield cast("Reads", tx._store("reads"))
        self.log.append(("read", tx.calls))

    @property
    def committed(self) -> list[list[str]]:
        return [calls for outcome, calls in self.log if outcome == "committed"]


# The fake is a unit of work, and its transaction a Tx, as mypy sees them.
_unit: UnitOfWork = FakeUnitOfWork()
_tx: Tx = FakeTx({})
