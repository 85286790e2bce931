"""Thin Celery tasks: decode ids, call a service, map the outcome."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from workers.app import app

RUN_RETRIES = 3


class CeleryScheduler:
    """The services' Scheduler on this app's queues."""

    def enqueue_runs(self, run_ids: Sequence[UUID]) -> None:
        for run_id in run_ids:
            execute_run.delay(str(run_id))

    def enqueue_evaluations(self, version_ids: Sequence[UUID]) -> None:
        for version_id in dict.fromkeys(version_ids):
            evaluate_node.delay(str(version_id))

    def enqueue_cascade(self, pending: Sequence[tuple[UUID, int]]) -> None:
        cascade.delay([[str(v), d] for v, d in pending])


def _engine() -> Any:
    from council.ledger.db import default_engine

    return default_engine()


@app.task(name="council.execute_run", bind=True, max_retries=RUN_RETRIES)
def execute_run(self: Any, run_id: str) -> dict[str, Any]:
    from council.agents.errors import TransientLLMError
    from council.services.runs import execute_run as execute

    try:
        result = execute(_engine(), CeleryScheduler(), UUID(run_id))
    except TransientLLMError as exc:
        if self.request.retries >= RUN_RETRIES:
            from council.services.runs import give_up

            return give_up(_engine(), CeleryScheduler(), UUID(run_id), f"provider kept failing: {exc}")
        raise self.retry(exc=exc, countdown=2 ** (self.request.retries + 1)) from exc
    return {k: str(v) if isinstance(v, UUID) else v for k, v in result.items() if k != "touched_versions"}


@app.task(name="council.evaluate_node")
def evaluate_node(version_id: str) -> dict[str, Any]:
    from council.ledger.committer import consolidate

    result = consolidate(_engine(), UUID(version_id), actor="worker:commit")
    return {"outcome": result["outcome"], "consolidation_id": str(result.get("consolidation_id") or "")}


@app.task(name="council.sweep")
def sweep() -> dict[str, Any]:
    from council.ledger.run_lifecycle import sweep as find_stale

    stale = find_stale(_engine(), stale_s=float(os.environ.get("COUNCIL_SWEEP_STALE_S", "300")))
    CeleryScheduler().enqueue_runs(stale)
    return {"requeued": len(stale)}


@app.task(name="council.noop")
def noop() -> None:
    """Does nothing: the dispatch benchmark's baseline Celery round trip (benchmarks/dispatch.py)."""


@app.task(name="council.cascade")
def cascade(pending: list[list[Any]]) -> dict[str, Any]:
    """One bounded step of a reversal cascade; queues its own continuation."""
    from council.services.reversal import continue_cascade

    return continue_cascade(_engine(), CeleryScheduler(), [(UUID(v), int(d)) for v, d in pending])


@app.task(name="council.reverify")
def reverify() -> dict[str, Any]:
    """The re-verification sweep: a review dispatch for each open proposal without one."""
    from council.services.reversal import reverify as dispatch_reviews

    result = dispatch_reviews(_engine(), CeleryScheduler())
    return {"dispatched": [str(d) for d in result["dispatched"]]}
