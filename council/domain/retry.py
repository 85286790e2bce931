"""The one retry policy (STYLE: dramatiq): which errors are worth asking again,
and how long to wait before the next try.

Transient errors (``council.errors.Transient``: a provider's rate limit,
timeout, connection error or 5xx; a lost or refused database connection, a
deadlock, a lock or statement timeout) are retried with full-jitter
exponential backoff, at most ``max_retries`` times, at one level only: the
Celery task that owns the work (``council/workers/retrying.py``: the tasks' base class).
The one in-process use is the committer's retry of a lost race: these delays
with tighter bounds (``council.services.consolidation.COMMIT_RETRY``).
Everything else is permanent and fails at once. An endpoint that refuses connections
(``council.errors.Unreachable``) is retried as often on a short schedule
(``unreachable_base_s``, ``unreachable_cap_s``): nothing listens there, so waiting
half a minute between tries only keeps a council's round waiting on a dead agent.
Pure: no clock, no I/O; the caller supplies the random draw.
"""

from __future__ import annotations

from dataclasses import dataclass

from council.errors import Transient


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    base_s: float = 2.0
    cap_s: float = 30.0
    unreachable_base_s: float = 0.1
    unreachable_cap_s: float = 1.0

    def delay(self, retries_so_far: int, draw: float, *, unreachable: bool = False) -> float | None:
        """Seconds to wait before retry number ``retries_so_far + 1``, or None when
        the retries are spent. ``draw`` is a uniform random number in [0, 1);
        ``unreachable``: the try failed to connect at all (the short schedule)."""
        if retries_so_far >= self.max_retries:
            return None
        base, cap = (self.base_s, self.cap_s)
        if unreachable:
            base, cap = (self.unreachable_base_s, self.unreachable_cap_s)
        ceiling = min(cap, base * 2.0**retries_so_far)
        return max(0.0, draw) * ceiling

    def last_try(self, retries_so_far: int) -> bool:
        """Whether the try after ``retries_so_far`` retries is the last one allowed."""
        return retries_so_far >= self.max_retries


@dataclass(frozen=True)
class RetryAt:
    """An outcome, not an error: a transient error cut the work off and it should be
    tried again by the policy. ``attempt`` is the run attempt the error cut off (the
    retry takes it over at once, without waiting out its lease), None for none."""

    attempt: int | None
    error: Transient


def is_transient(exc: BaseException) -> bool:
    return isinstance(exc, Transient)
