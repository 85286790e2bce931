"""What the services ask of a task queue (the port; Celery implements it in council.adapters.celery)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol
from uuid import UUID


class NotDelivered(Exception):
    """The queue did not take the work (its broker is down or unreachable); the message
    says why in one line. The work stays in the ledger, where the sweep finds it."""


class Scheduler(Protocol):
    def enqueue_runs(self, run_ids: Sequence[UUID]) -> None: ...

    def enqueue_evaluations(self, version_ids: Sequence[UUID]) -> None: ...

    def enqueue_cascade(self, continuation_ids: Sequence[UUID]) -> None: ...

    def enqueue_reverification(self, memory_item_ids: Sequence[UUID]) -> None: ...


class Recorder:
    """A scheduler that only records what it was asked (tests, dry runs)."""

    def __init__(self) -> None:
        self.runs: list[UUID] = []
        self.evaluations: list[UUID] = []
        self.cascades: list[list[UUID]] = []
        self.reverifications: list[list[UUID]] = []

    def enqueue_runs(self, run_ids: Sequence[UUID]) -> None:
        self.runs.extend(run_ids)

    def enqueue_evaluations(self, version_ids: Sequence[UUID]) -> None:
        self.evaluations.extend(version_ids)

    def enqueue_cascade(self, continuation_ids: Sequence[UUID]) -> None:
        self.cascades.append(list(continuation_ids))

    def enqueue_reverification(self, memory_item_ids: Sequence[UUID]) -> None:
        self.reverifications.append(list(memory_item_ids))
