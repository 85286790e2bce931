"""What the services use of the unit of work, as Protocols (cosmicpython's AbstractUnitOfWork).

Services are typed against these, not against ``council.ledger.unit``: the real unit
(``council.ledger.unit.UnitOfWork``) and the orchestration tests' fake
(``tests.fakes.uow.FakeUnitOfWork``, type-checked) both satisfy them, so mypy checks the
fake as it checks the real one. A use case opens one transaction with ``with uow() as tx``
(or a psycopg-only read with ``with uow.reading() as reads``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol
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


class Tx(Protocol):
    """The ledger inside one transaction: its connection, id resolution and the stores."""

    @property
    def conn(self) -> Connection: ...

    def resolve(self, kind: str, value: str | UUID) -> UUID:
        """The id of a ``kind`` named whole or by a unique prefix (bad input otherwise)."""
        ...

    @property
    def threads(self) -> Threads: ...

    @property
    def events(self) -> Events: ...

    @property
    def evidence(self) -> EvidenceStore: ...

    @property
    def nodes(self) -> Nodes: ...

    @property
    def claims(self) -> Claims: ...

    @property
    def branches(self) -> Branches: ...

    @property
    def actions(self) -> Actions: ...

    @property
    def committer(self) -> Committer: ...

    @property
    def consolidations(self) -> Consolidations: ...

    @property
    def retractions(self) -> Retractions: ...

    @property
    def budgets(self) -> Budgets: ...

    @property
    def reviews(self) -> ReviewStore: ...

    @property
    def reversal(self) -> Reversal: ...

    @property
    def cascades(self) -> Cascades: ...

    @property
    def rule_sets(self) -> RuleSets: ...

    @property
    def runs(self) -> Runs: ...

    @property
    def outputs(self) -> Outputs: ...

    @property
    def unfinished(self) -> Unfinished: ...

    @property
    def graph(self) -> Graph: ...

    @property
    def alternatives(self) -> Alternatives: ...

    @property
    def frontier(self) -> Frontier: ...

    @property
    def answers(self) -> Answers: ...

    @property
    def traces(self) -> Traces: ...

    @property
    def learning(self) -> Learning: ...

    @property
    def lint(self) -> Lint: ...

    @property
    def rounds(self) -> RoundBriefings: ...


class UnitOfWork(Protocol):
    """Opens one transaction per ``with uow() as tx``, one psycopg-only read per
    ``with uow.reading() as reads``; commits when the block ends normally, rolls back when it raises."""

    def __call__(self) -> AbstractContextManager[Tx]: ...

    def reading(self) -> AbstractContextManager[Reads]: ...
