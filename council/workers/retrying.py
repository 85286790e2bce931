"""Transient errors retried at one level — the task that owns the work — by the
one policy (``council.domain.retry``), with Celery's own retry: the message is
sent again with the policy's countdown, so it is never acknowledged and lost
because the database (or a provider) was briefly away.

Every task names :class:`PolicyTask` as its base, which applies the policy to
whatever the task raises or returns (a ``RetryAt`` outcome: a run's try asks for
a retry at the attempt it held), so no task writes its own ``try``/``except``.

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

from celery import Task

from council.config import retry_policy
from council.domain.retry import RetryAt, is_transient
from council.errors import Unreachable

# Read when the worker imports its tasks: a malformed setting stops it at start.
POLICY = retry_policy()

logger = logging.getLogger("council.workers")


class PolicyTask(Task):  # type: ignore[misc]  # Celery's Task carries no annotations
    """A task under the one retry policy. Each names, as options of its decorator, the
    ``work`` it leaves to the sweep when its retries are spent (``{n}``: how many ids
    the message carries) and how the sweep finds it (``found_by``). Results are
    ignored (``task_ignore_result``); what a task returns matters only to a caller
    that runs it in process (``apply``)."""

    max_retries = POLICY.max_retries
    work = "task"
    found_by = "finds the work left in the ledger"

    @property
    def try_no(self) -> int:
        """This try's number: 1, then one more for each retry."""
        return int(self.request.retries or 0) + 1

    @property
    def last_try(self) -> bool:
        """Whether this is the last try the policy allows (a run fails itself on it)."""
        return POLICY.last_try(int(self.request.retries or 0))

    def describe(self, args: tuple[object, ...]) -> str:
        """The work this message carries, as the ERROR line names it: ``work``, with
        ``{n}`` the number of ids its first argument lists."""
        first = args[0] if args else None
        return self.work.format(n=len(first) if isinstance(first, list) else 1)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            outcome = super().__call__(*args, **kwargs)
        except Exception as exc:  # the policy decides: retried, left to the sweep, or raised
            retry_or_leave(self, exc, work=self.describe(args), found_by=self.found_by)
            return {"left_for_sweep": args[0] if args else None}
        if isinstance(outcome, RetryAt):
            retry_at(self, outcome, args, kwargs)
        return outcome


def retry_at(task: Any, outcome: RetryAt, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    """Retry the task after the policy's countdown, the retry given the attempt the error
    cut off (``held_attempt``); on the last try the error is raised, never retried past the
    policy (the service has already ended what it could end: a run's last try fails it)."""
    unreachable = isinstance(outcome.error, Unreachable)  # nothing listens: the short schedule
    countdown = POLICY.delay(int(task.request.retries or 0), random.random(), unreachable=unreachable)  # noqa: S311
    if countdown is None:
        raise outcome.error
    held = {} if outcome.attempt is None else {"held_attempt": outcome.attempt}
    kept = {k: v for k, v in kwargs.items() if k != "held_attempt"}
    raise task.retry(
        args=list(args),
        kwargs={**kept, **held},
        exc=outcome.error,
        countdown=countdown,
        max_retries=POLICY.max_retries,
    ) from outcome.error


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
