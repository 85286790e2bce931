"""Thin Celery tasks: decode ids, call a service, map the outcome."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from celery.signals import worker_init

from workers.app import app
from workers.coalesce import EVALUATION, REVERIFICATION, Marks, marks_for
from workers.retry_config import retry_policy

# At most this many versions per commit-queue message; a message also closes at about
# CLAIMS_PER_TRANSACTION claims (committer.plan_batches), so lightly claimed versions go
# many to a message and one committer transaction, heavy ones alone, spread over workers.
EVALUATION_BATCH = max(1, int(os.environ.get("COUNCIL_EVALUATION_BATCH", "50")))
# How long an evaluation waits before it starts, so that more claims on the same
# versions are decided together. Off by default: a later deliberative round can
# merge groups that were independent, and each state deserves its evaluation.
EVALUATION_DELAY_S = float(os.environ.get("COUNCIL_EVALUATION_DELAY_S", "0"))


class CeleryScheduler:
    """The services' Scheduler on this app's queues."""

    def enqueue_runs(self, run_ids: Sequence[UUID]) -> None:
        for run_id in run_ids:
            execute_run.delay(str(run_id))

    def enqueue_evaluations(self, version_ids: Sequence[UUID]) -> None:
        from council.ledger.unit import UnitOfWork
        from council.services.consolidation import plan_batches

        waiting = _marks(EVALUATION).mark(list(dict.fromkeys(str(v) for v in version_ids)))
        if not waiting:
            return
        planned = plan_batches(
            UnitOfWork(_engine()), [UUID(v) for v in waiting], max_versions=EVALUATION_BATCH
        )
        for batch in planned:
            evaluate_nodes.apply_async(([str(v) for v in batch],), countdown=EVALUATION_DELAY_S or None)

    def enqueue_cascade(self, pending: Sequence[tuple[UUID, int]]) -> None:
        cascade.delay([[str(v), d] for v, d in pending])

    def enqueue_reverification(self, memory_item_ids: Sequence[UUID]) -> None:
        waiting = _marks(REVERIFICATION).mark(list(dict.fromkeys(str(i) for i in memory_item_ids)))
        if waiting:
            reverify.delay(waiting)


def scheduler_if_configured() -> CeleryScheduler | None:
    """The Celery scheduler when a broker is configured (environment or `council up`),
    else None: faces then continue a reversal cascade inline and refuse dispatch."""
    from council import config
    from workers.app import bootstrap

    url = config.broker_url(required=False)
    if url is None:
        return None
    bootstrap(url)
    return CeleryScheduler()


def _marks(prefix: str) -> Marks:
    return marks_for(str(app.conf.broker_url), prefix)


def _engine() -> Any:
    from council.ledger.db import default_engine

    return default_engine()


@app.task(name="council.execute_run", bind=True, max_retries=None)
def execute_run(self: Any, run_id: str) -> dict[str, Any]:
    """One try of a run. A transient model error is retried here and nowhere
    else, after the policy's backoff; the last try the policy allows fails the
    run with the reason instead (the gateway itself makes one attempt a call)."""
    from council.agents.errors import TransientLLMError
    from council.services.runs import execute_run as execute

    retries = int(self.request.retries or 0)
    delay = retry_policy().delay(retries, random.random())  # noqa: S311 (jitter, not a secret)
    try:
        result = execute(
            _engine(),
            CeleryScheduler(),
            UUID(run_id),
            owner=_worker_name(self),
            try_no=retries + 1,
            last_try=delay is None,
        )
    except TransientLLMError as exc:
        if delay is None:  # the service ends the run on its last try; never retry past the policy
            raise
        raise self.retry(exc=exc, countdown=delay) from exc
    return {k: str(v) if isinstance(v, UUID) else v for k, v in result.items() if k != "touched_versions"}


def _worker_name(task: Any) -> str | None:
    """The Celery node name with this process's id (a prefork pool shares the
    node name), or None to let the service name the host."""
    node = getattr(task.request, "hostname", None)
    return f"{node}:{os.getpid()}" if node else None


@app.task(name="council.evaluate_nodes")
def evaluate_nodes(version_ids: list[str]) -> dict[str, Any]:
    """Evaluate the versions in one committer transaction; should that fail, each
    on its own, so one failure does not keep the others from being decided."""
    from council.ledger.unit import UnitOfWork
    from council.services.consolidation import consolidate, consolidate_many

    _marks(EVALUATION).unmark(version_ids)  # before reading: a later claim enqueues a fresh evaluation
    ids = [UUID(v) for v in version_ids]
    try:
        results = consolidate_many(UnitOfWork(_engine()), ids, actor="worker:commit")
        return {"outcomes": {str(r.node_version_id): r.outcome for r in results}}
    except Exception:  # decided one by one below, where the failure is isolated
        if len(ids) == 1:
            raise
    outcomes: dict[str, str] = {}
    failed: list[Exception] = []
    for version_id in ids:
        try:
            outcomes[str(version_id)] = consolidate(
                UnitOfWork(_engine()), version_id, actor="worker:commit"
            ).outcome
        except Exception as exc:  # re-raised below, after the other versions
            failed.append(exc)
    if failed:
        raise failed[0]
    return {"outcomes": outcomes}


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
def reverify(memory_item_ids: list[str] | None = None) -> dict[str, Any]:
    """Re-verification: of the given provisional memory items (a read touched
    them) or, from the beat sweep, of all; then a review dispatch for each open
    proposal without one."""
    from council.services.reversal import reverify as reverify_and_review

    if memory_item_ids is not None:
        _marks(REVERIFICATION).unmark(memory_item_ids)  # before reading, as for evaluations
    result = reverify_and_review(
        _engine(),
        CeleryScheduler(),
        memory_item_ids=[UUID(i) for i in memory_item_ids] if memory_item_ids is not None else None,
    )
    return {
        "reverified": [
            {"memory_item_id": str(r["memory_item_id"]), "memory_status": r["memory_status"]}
            for r in result["reverified"]
        ],
        "dispatched": [str(d) for d in result["dispatched"]],
    }


@worker_init.connect
def _import_litellm_before_the_pool_forks(**_: Any) -> None:
    """In the worker's main process, before the pool forks: each pool process
    would otherwise spend seconds of CPU importing litellm on its first run.
    A malformed retry setting stops the worker here, not at its first retry."""
    from council.agents import gateway

    retry_policy()
    gateway.preload()
