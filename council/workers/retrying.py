"""Transient errors retried at one level — the task that owns the work — by the
one policy (``council.domain.retry``), with Celery's own retry: the message is
sent again with the policy's countdown, so it is never acknowledged and lost
because the database (or a provider) was briefly away.

Spent retries end visibly: one line at ERROR with the reason, and the task
returns. That loses nothing, because the work is not in the message: it is in
the ledger (a run still queued or leased, claims no evaluation saw, a cascade
continuation no step took, provisional memory with challenged support), where
the periodic sweep finds it and enqueues it again.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from council.config import retry_policy
from council.domain.retry import is_transient

# Read when the worker imports its tasks: a malformed setting stops it at start.
POLICY = retry_policy()

logger = logging.getLogger("council.workers")


def retry_or_leave(task: Any, exc: BaseException, *, work: str, found_by: str) -> None:
    """Re-raise ``exc`` unless it is transient; retry the task after the policy's
    countdown while retries are left (raises Celery's ``Retry``); else log the
    reason at ERROR and return, leaving ``work`` to the sweep (``found_by`` says how it finds it)."""
    if not is_transient(exc):
        raise exc
    retries = int(task.request.retries or 0)
    countdown = POLICY.delay(retries, random.random())  # noqa: S311 - jitter, not security
    if countdown is None:
        logger.error(
            "%s: gave up after %d retries on a transient error, left for the sweep, which %s: %s: %s",
            work,
            retries,
            found_by,
            type(exc).__name__,
            " ".join(str(exc).split()),  # one line: a driver's message may span several
        )
        return
    raise task.retry(exc=exc, countdown=countdown, max_retries=POLICY.max_retries)
