"""Thin Celery tasks: decode ids, call a service, map the outcome.

Each task gets its dependencies from the one bootstrap (per process); their base
class, ``council/workers/retrying.py::PolicyTask``, retries transient errors by the one policy,
so no task catches an error to retry it.
"""

from __future__ import annotations

import functools
import os
from typing import Any
from uuid import UUID

from celery.signals import worker_init

from council.adapters import task_names
from council.adapters.celery_app import app
from council.bootstrap import Council, bootstrap
from council.domain.retry import RetryAt, is_transient
from council.settings import settings
from council.workers.retrying import PolicyTask

# Without coalescing marks (a broker other than Redis) the sweep cannot tell a lost run
# message from one still waiting in a long queue: it waits COUNCIL_SWEEP_STALE_S before
# re-enqueueing (Settings.sweep_stale_s).


@functools.cache
def _council() -> Council:
    """This process's wired dependencies (each pool process builds its own)."""
    return bootstrap()


def _worker_name(task: Any) -> str | None:
    """The Celery node name with this process's id (a prefork pool shares the
    node name), or None to let the service name the host."""
    node = getattr(task.request, "hostname", None)
    return f"{node}:{os.getpid()}" if node else None


@app.task(
    name=task_names.EXECUTE_RUN,
    base=PolicyTask,
    bind=True,
    work="run",
    found_by="re-enqueues queued runs nothing is waiting for and runs whose lease expired",
)
def execute_run(self: PolicyTask, run_id: str, held_attempt: int | None = None) -> Any:
    """One try of a run. A transient error asks for a retry (``RetryAt``), which the
    base class makes after the policy's backoff, and nowhere else; the last try the
    policy allows fails the run with the reason instead (the gateway itself makes one
    attempt a call). The retry carries the attempt the error cut off
    (``held_attempt``), which it takes over at once rather than waiting for that
    attempt's lease to expire."""
    from council.services.execution import try_run

    wired = _council()
    outcome = try_run(
        wired.uow,
        wired.required_scheduler(),
        UUID(run_id),
        owner=_worker_name(self),
        try_no=self.try_no,
        last_try=self.last_try,
        held_attempt=held_attempt,
    )
    return outcome if isinstance(outcome, RetryAt) else outcome.json_document()


@app.task(
    name=task_names.EVALUATE_NODES,
    base=PolicyTask,
    bind=True,
    work="evaluation of {n} version(s)",
    found_by="re-enqueues open versions with claims no evaluation saw",
)
def evaluate_nodes(self: PolicyTask, version_ids: list[str]) -> dict[str, object]:
    """Evaluate the versions in one committer transaction; should that fail for a
    reason of one version's own, each on its own, so that one does not keep the
    others from being decided. A transient failure retries the whole message (the
    versions already decided are idempotent on the retry)."""
    from council.services.consolidation import consolidate, consolidate_many

    uow = _council().uow
    ids = [UUID(v) for v in version_ids]
    try:
        results = consolidate_many(uow, ids, actor="worker:commit")
        return {"outcomes": {str(r.node_version_id): r.outcome for r in results}}
    except Exception as exc:  # decided one by one below, where the failure is isolated
        if is_transient(exc) or len(ids) == 1:
            raise
    outcomes: dict[str, str] = {}
    failed: list[Exception] = []
    for version_id in ids:
        try:
            outcomes[str(version_id)] = consolidate(uow, version_id, actor="worker:commit").outcome
        except Exception as exc:  # raised below, after the other versions
            failed.append(exc)
    if failed:
        raise next((e for e in failed if is_transient(e)), failed[0])
    return {"outcomes": outcomes}


@app.task(
    name=task_names.SWEEP,
    base=PolicyTask,
    bind=True,
    work="sweep",
    found_by="runs again on the next beat",
)
def sweep(self: PolicyTask) -> dict[str, object]:
    """Re-enqueue unfinished work of every kind (council.services.sweep)."""
    from council.adapters.celery import marks
    from council.adapters.coalesce import RUN
    from council.services.sweep import sweep as find_and_hand_on

    wired = _council()
    current = settings()
    # With coalescing marks, a queued run with nothing waiting is lost as soon as it has
    # settled for one sweep interval; without them only after the stale wait.
    runs_settle_s = current.sweep_every_s if marks(RUN).coalescing else current.sweep_stale_s
    swept = find_and_hand_on(
        wired.uow, wired.required_scheduler(), settle_s=current.sweep_every_s, runs_settle_s=runs_settle_s
    )
    return {
        "swept": True,
        "runs": len(swept.runs),
        "evaluations": len(swept.evaluations),
        "cascades": len(swept.cascades),
        "reassessed": swept.reassessed,
        "rounds": len(swept.rounds),
        "adjudicated": len(swept.adjudicated),
    }


@app.task(name="council.noop")
def noop() -> None:
    """Does nothing: the dispatch benchmark's baseline Celery round trip (benchmarks/dispatch.py)."""


@app.task(
    name=task_names.CASCADE,
    base=PolicyTask,
    bind=True,
    work="cascade step",
    found_by="re-enqueues continuations no step continued",
)
def cascade(self: PolicyTask, continuation_ids: list[str]) -> dict[str, object]:
    """One bounded step of a reversal cascade; queues its own continuation."""
    from council.services.reversal import continue_cascade

    wired = _council()
    return continue_cascade(wired.uow, wired.scheduler(), [UUID(c) for c in continuation_ids]).json_document()


@app.task(
    name=task_names.REVERIFY,
    base=PolicyTask,
    bind=True,
    work="re-verification",
    found_by="(council.reverify on its beat) re-verifies provisional memory with challenged support",
)
def reverify(self: PolicyTask, memory_item_ids: list[str] | None = None) -> dict[str, object]:
    """Re-verification: of the given provisional memory items (a read touched
    them) or, from the beat sweep, of all; then a review dispatch for each open
    proposal without one."""
    from council.services.reversal import reverify as reverify_and_review

    wired = _council()
    result = reverify_and_review(
        wired.uow,
        wired.required_scheduler(),
        memory_item_ids=[UUID(i) for i in memory_item_ids] if memory_item_ids is not None else None,
    )
    return {
        "reverified": [
            {"memory_item_id": str(r.memory_item_id), "memory_status": r.memory_status}
            for r in result.reverified
        ],
        "dispatched": [str(d) for d in result.dispatched],
        "unstaffed": [str(p) for p in result.unstaffed],
        "unfunded": [str(p) for p in result.unfunded],
    }


@worker_init.connect
def _prepare_before_the_pool_forks(**_: object) -> None:
    """In the worker's main process, before the pool forks: each pool process
    would otherwise spend seconds of CPU importing litellm on its first run.
    A malformed retry setting stops the worker here, not at its first retry."""
    from council.services.preparation import prepare

    prepare()
