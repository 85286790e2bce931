"""The services' Scheduler on Celery (placeholder until the move from workers/tasks.py)."""

from __future__ import annotations

from council.adapters.scheduler import Scheduler


def scheduler_if_configured() -> Scheduler | None:
    from workers.tasks import scheduler_if_configured as configured

    return configured()
