"""A unit of work with in-memory stores, for orchestration tests (cosmicpython's
FakeUnitOfWork): the services' sequencing — what they write in which
transaction, what they hand the scheduler, what they retry — without Postgres.
Correctness of the ledger itself is tested on real Postgres everywhere else.

A fake transaction commits when its block ends normally and rolls back when
it raises, like the real one; ``log`` records both, in order, with every store
call made inside, so a test can say which calls shared a transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FakeTx:
    stores: dict[str, Any]
    calls: list[str] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        try:
            store = self.__dict__["stores"][name]
        except KeyError:
            raise AttributeError(f"the fake unit of work has no store {name!r}") from None
        return _Recording(store, name, self.calls)

    def resolve(self, kind: str, value: Any) -> Any:
        self.calls.append(f"resolve {kind}")
        return value


class _Recording:
    """Forwards to a fake store, noting each call as ``store.method``."""

    def __init__(self, store: Any, name: str, calls: list[str]) -> None:
        self._store, self._name, self._calls = store, name, calls

    def __getattr__(self, method: str) -> Any:
        target = getattr(self._store, method)

        def call(*args: Any, **kwargs: Any) -> Any:
            self._calls.append(f"{self._name}.{method}")
            return target(*args, **kwargs)

        return call


class FakeUnitOfWork:
    def __init__(self, **stores: Any) -> None:
        self.stores = stores
        self.log: list[tuple[str, list[str]]] = []  # (committed | rolled back, calls)

    @contextmanager
    def __call__(self) -> Iterator[FakeTx]:
        tx = FakeTx(self.stores)
        try:
            yield tx
        except BaseException:
            self.log.append(("rolled back", tx.calls))
            raise
        self.log.append(("committed", tx.calls))

    @property
    def committed(self) -> list[list[str]]:
        return [calls for outcome, calls in self.log if outcome == "committed"]
