"""`celery -A council.workers.app`: the project's Celery application (configured in
``council.adapters.celery_app``), with the tasks of ``council.workers.tasks``."""

from __future__ import annotations

from council.adapters.celery_app import app, connect

__all__ = ["app", "connect"]
