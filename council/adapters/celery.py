"""The services' Scheduler on Celery: tasks sent by name to their queues.

Each id is sent once while its message waits (``council.adapters.coalesce``),
so the sweep may hand work over freely. Evaluations are sent in batches of
one committer transaction each; how to cut them is the services' decision,
handed in as ``plan`` (the bootstrap wires ``services.consolidation.plan_batches``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from uuid import UUID

from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

from council import config
from council.adapters import task_names
from council.adapters.celery_app import app, connect
from council.adapters.coalesce import CASCADE, EVALUATION, REVERIFICATION, RUN, Marks, marks_for
from council.adapters.scheduler import NotDelivered
from council.settings import settings

# What a broker that is down or unreachable raises when a message is sent to it (kombu wraps
# most; redis-py, for the coalescing marks, and sockets raise their own).
BROKER_ERRORS: tuple[type[BaseException], ...] = (OperationalError, RedisError, OSError)

# How long an evaluation waits before it starts, so that more claims on the same
# versions are decided together. Off by default: a later deliberative round can
# merge groups that were independent, and each state deserves its evaluation
# (COUNCIL_EVALUATION_DELAY_S, seconds, default 0).

Plan = Callable[[Sequence[UUID]], list[list[UUID]]]


class CeleryScheduler:
    def __init__(self, plan: Plan) -> None:
        self._plan = plan

    def enqueue_runs(self, run_ids: Sequence[UUID]) -> None:
        """Raises NotDelivered when the broker does not take them."""
        try:
            with marks(RUN).sending([str(r) for r in run_ids]) as waiting:
                for run_id in waiting:
                    app.send_task(task_names.EXECUTE_RUN, args=[run_id])
        except BROKER_ERRORS as exc:
            detail = " ".join(str(exc).split())[:200] or type(exc).__name__
            raise NotDelivered(f"the broker did not take the runs ({detail})") from exc

    def enqueue_evaluations(self, version_ids: Sequence[UUID]) -> None:
        with marks(EVALUATION).sending([str(v) for v in version_ids]) as waiting:
            if not waiting:
                return
            for batch in self._plan([UUID(v) for v in waiting]):
                app.send_task(
                    task_names.EVALUATE_NODES,
                    args=[[str(v) for v in batch]],
                    countdown=settings().evaluation_delay_s or None,
                )

    def enqueue_cascade(self, continuation_ids: Sequence[UUID]) -> None:
        with marks(CASCADE).sending([str(c) for c in continuation_ids]) as waiting:
            if waiting:
                app.send_task(task_names.CASCADE, args=[waiting])

    def enqueue_reverification(self, memory_item_ids: Sequence[UUID]) -> None:
        with marks(REVERIFICATION).sending([str(i) for i in memory_item_ids]) as waiting:
            if waiting:
                app.send_task(task_names.REVERIFY, args=[waiting])


def marks(prefix: str) -> Marks:
    return marks_for(str(app.conf.broker_url), prefix)


def scheduler_if_configured(plan: Plan) -> CeleryScheduler | None:
    """The Celery scheduler when a broker is configured (environment or `council up`),
    else None: faces then continue a reversal cascade inline and refuse dispatch."""
    url = config.broker_url(required=False)
    if url is None:
        return None
    connect(url)
    return CeleryScheduler(plan)
