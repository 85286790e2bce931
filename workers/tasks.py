"""Thin Celery tasks: decode ids, call a service, map the outcome."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from celery.signals import worker_init

from workers.app import SWEEP_EVERY_S, app
from workers.coalesce import CASCADE, EVALUATION, REVERIFICATION, RUN, Marks, marks_for
from workers.retrying import POLICY, retry_or_leave

# At most this many versions per commit-queue message; a message also closes at about
# CLAIMS_PER_TRANSACTION claims (committer.plan_batches), so lightly claimed versions go
# many to a message and one committer transaction, heavy ones alone, spread over workers.
EVALUATION_BATCH = max(1, int(os.environ.get("COUNCIL_EVALUATION_BATCH", "50")))
# How long an evaluation waits before it starts, so that more claims on the same
# versions are decided together. Off by default: a later deliberative round can
# merge groups that were independent, and each state deserves its evaluation.
EVALUATION_DELAY_S = float(os.environ.get("COUNCIL_EVALUATION_DELAY_S", "0"))
# Without coalescing marks (a broker other than Redis) the sweep cannot tell a lost run
# message from one still waiting in a long queue: it waits this long before re-enqueueing.
SWEEP_STALE_S = float(os.environ.get("COUNCIL_SWEEP_STALE_S", "300"))


class CeleryScheduler:
    """The services' Scheduler on this app's queues. Each id is sent once while its
    message waits (workers/coalesce.py), so the sweep may hand over work freely."""

    def enqueue_runs(self, run_ids: Sequence[UUID]) -> None:
        with _marks(RUN).sending([str(r) for r in run_ids]) as waiting:
            for run_id in waiting:
                execute_run.delay(run_id)

    def enqueue_evaluations(self, version_ids: Sequence[UUID]) -> None:
        from council.ledger.committer import plan_batches

        with _marks(EVALUATION).sending([str(v) for v in version_ids]) as waiting:
            if not waiting:
                return
            for batch in plan_batches(_engine(), [UUID(v) for v in waiting], max_versions=EVALUATION_BATCH):
                evaluate_nodes.apply_async(([str(v) for v in batch],), countdown=EVALUATION_DELAY_S or None)

    def enqueue_cascade(self, continuation_ids: Sequence[UUID]) -> None:
        with _marks(CASCADE).sending([str(c) for c in continuation_ids]) as waiting:
            if waiting:
                cascade.delay(waiting)

    def enqueue_reverification(self, memory_item_ids: Sequence[UUID]) -> None:
        with _marks(REVERIFICATION).sending([str(i) for i in memory_item_ids]) as waiting:
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
    delay = POLICY.delay(retries, random.random())  # noqa: S311 (jitter, not a secret)
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


@app.task(name="council.evaluate_nodes", bind=True, max_retries=POLICY.max_retries)
def evaluate_nodes(self: Any, version_ids: list[str]) -> dict[str, Any]:
    """Evaluate the versions in one committer transaction; should that fail for a
    reason of one version's own, each on its own, so that one does not keep the
    others from being decided. A transient failure retries the whole message."""
    from council.domain.retry import is_transient
    from council.ledger.committer import consolidate, consolidate_many

    ids = [UUID(v) for v in version_ids]
    work = f"evaluation of {len(ids)} version(s)"
    found_by = "re-enqueues open versions with claims no evaluation saw"
    try:
        results = consolidate_many(_engine(), ids, actor="worker:commit")
        return {"outcomes": {str(r["node_version_id"]): r["outcome"] for r in results}}
    except Exception as exc:  # decided one by one below, where the failure is isolated
        if is_transient(exc) or len(ids) == 1:
            retry_or_leave(self, exc, work=work, found_by=found_by)
            return {"left_for_sweep": version_ids}
    outcomes: dict[str, str] = {}
    failed: list[Exception] = []
    for version_id in ids:
        try:
            outcomes[str(version_id)] = consolidate(_engine(), version_id, actor="worker:commit")["outcome"]
        except Exception as exc:  # raised below, after the other versions
            failed.append(exc)
    transient = next((e for e in failed if is_transient(e)), None)
    if transient is not None:  # the versions already decided are idempotent on the retry
        retry_or_leave(self, transient, work=work, found_by=found_by)
        return {"outcomes": outcomes, "left_for_sweep": version_ids}
    if failed:
        raise failed[0]
    return {"outcomes": outcomes}


@app.task(name="council.sweep", bind=True, max_retries=POLICY.max_retries)
def sweep(self: Any) -> dict[str, Any]:
    """Re-enqueue unfinished work of every kind (council.services.sweep)."""
    from council.services.sweep import sweep as find_and_enqueue

    # With coalescing marks, a queued run with nothing waiting is lost as soon as it has
    # settled for one sweep interval; without them only after SWEEP_STALE_S.
    runs_settle_s = SWEEP_EVERY_S if _marks(RUN).coalescing else SWEEP_STALE_S
    try:
        swept = find_and_enqueue(
            _engine(), CeleryScheduler(), settle_s=SWEEP_EVERY_S, runs_settle_s=runs_settle_s
        )
    except Exception as exc:
        retry_or_leave(self, exc, work="sweep", found_by="runs again on the next beat")
        return {"swept": False}
    return {
        "swept": True,
        "runs": len(swept.runs),
        "evaluations": len(swept.evaluations),
        "cascades": len(swept.cascades),
    }


@app.task(name="council.noop")
def noop() -> None:
    """Does nothing: the dispatch benchmark's baseline Celery round trip (benchmarks/dispatch.py)."""


@app.task(name="council.cascade", bind=True, max_retries=POLICY.max_retries)
def cascade(self: Any, continuation_ids: list[str]) -> dict[str, Any]:
    """One bounded step of a reversal cascade; queues its own continuation."""
    from council.services.reversal import continue_cascade

    try:
        step = continue_cascade(_engine(), CeleryScheduler(), [UUID(c) for c in continuation_ids])
    except Exception as exc:
        retry_or_leave(self, exc, work="cascade step", found_by="re-enqueues continuations no step continued")
        return {"left_for_sweep": continuation_ids}
    return {k: str(v) if isinstance(v, UUID) else v for k, v in step.items()}


@app.task(name="council.reverify", bind=True, max_retries=POLICY.max_retries)
def reverify(self: Any, memory_item_ids: list[str] | None = None) -> dict[str, Any]:
    """Re-verification: of the given provisional memory items (a read touched
    them) or, from the beat sweep, of all; then a review dispatch for each open
    proposal without one."""
    from council.services.reversal import reverify as reverify_and_review

    try:
        result = reverify_and_review(
            _engine(),
            CeleryScheduler(),
            memory_item_ids=[UUID(i) for i in memory_item_ids] if memory_item_ids is not None else None,
        )
    except Exception as exc:
        retry_or_leave(
            self,
            exc,
            work="re-verification",
            found_by="(council.reverify on its beat) re-verifies provisional memory with challenged support",
        )
        return {"left_for_sweep": memory_item_ids}
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
    would otherwise spend seconds of CPU importing litellm on its first run."""
    from council.agents import gateway

    gateway.preload()
