"""The Celery application: configuration and routing only (no SQL, no prompts).

The workers (``council/workers/``) define their tasks on this app; the scheduler
(``council.adapters.celery``) sends them by name, so nothing that enqueues
work imports a task.

Queues: ``runs`` (agent runs, I/O bound), ``commit`` (consolidation
evaluations) and ``maintenance`` (the run sweep, the re-verification sweep and
cascade steps). Results live in Postgres, not in a result backend. Delivery
is at-least-once (acks late, rejected on worker loss); the ledger's leases and
attempt fencing make it exactly-once in effect.
"""

from __future__ import annotations

from celery import Celery
from kombu import Queue  # type: ignore[attr-defined]

from council import config
from council.adapters import task_names
from council.domain.vocabulary import QUEUES
from council.settings import settings

# The hard time limit of a task; the broker's visibility timeout must exceed it,
# or Redis would hand a still-running task to a second worker.
TASK_TIME_LIMIT_S = 900
VISIBILITY_TIMEOUT_S = TASK_TIME_LIMIT_S * 2


def configure(app: Celery, broker_url: str | None = None) -> Celery:
    """Static configuration; the broker URL is resolved when a face boots the app. What
    comes from the settings (the broker, the beat schedule: COUNCIL_SWEEP_EVERY_S,
    COUNCIL_REVERIFY_EVERY_S) is read when Celery first reads its configuration, not
    at import."""
    app.add_defaults(lambda: _from_settings(broker_url))
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        task_ignore_result=True,
        result_backend=None,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_time_limit=TASK_TIME_LIMIT_S,
        task_soft_time_limit=TASK_TIME_LIMIT_S - 60,
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT_S},
        broker_connection_retry_on_startup=True,
        task_default_queue="runs",
        task_queues=tuple(Queue(name) for name in QUEUES),
        task_routes={name: {"queue": queue} for name, queue in task_names.QUEUE_OF.items()},
        worker_hijack_root_logger=False,
    )
    return app


def _from_settings(broker_url: str | None) -> dict[str, object]:
    current = settings()
    return {
        "broker_url": broker_url or current.broker_url,
        "beat_schedule": {
            # A sweep still queued (or waiting to retry) when the next is due is dropped,
            # so sweeps do not pile up while the database is away.
            "sweep": {
                "task": task_names.SWEEP,
                "schedule": current.sweep_every_s,
                "options": {"expires": current.sweep_every_s},
            },
            "reverify": {
                "task": task_names.REVERIFY,
                "schedule": current.reverify_every_s,
                "options": {"expires": current.reverify_every_s},
            },
        },
    }


# Creating the app object connects to nothing; `celery -A council.workers.app` finds it here.
# A worker imports the included modules: the tasks, and the signal handlers that clear
# coalescing marks as a task starts (and set them while it retries) and serve its metrics.
app = configure(
    Celery(
        "council",
        include=["council.workers.tasks", "council.workers.coalesce", "council.workers.metrics_server"],
    )
)


def connect(broker_url: str | None = None) -> Celery:
    """Point the app at the configured broker (environment, else `council up`)."""
    app.conf.broker_url = broker_url or config.broker_url()
    return app
