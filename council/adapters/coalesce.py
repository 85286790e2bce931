"""Coalescing requests: one waiting message per run, per node version's
evaluation, per cascade continuation and per memory item's re-verification.

Runs outside a dispatch, rounds that close and the sweep enqueue evaluations of
the versions they touched, and they touch the same versions: without coalescing
the commit queue fills with copies of the same work. An id is *marked* in Redis (``SET NX`` with an
expiry) when its message is enqueued, and unmarked when its task *starts*,
before it reads anything (``task_prerun``, in ``council/workers/coalesce.py``). A claim that lands after
the start finds no mark and enqueues a fresh evaluation, so no change goes
unevaluated. With a broker other than Redis nothing is coalesced (every
request is enqueued, as before).

The marks also tell the sweep which work still has a message waiting (the
scheduler skips marked ids), and so must never outlive their message:

- a mark is dropped again when its message could not be sent;
- a task that retries marks its ids again, for as long as its retry can wait
  (``RETRY_MARK_TTL_S``: the retry cap, plus a minute or one ``MARK_TTL_S``
  when that is shorter): the retry is a waiting message, and when it starts
  it unmarks them as any start does. If it never comes (its worker died), the
  mark expires and the sweep re-enqueues the work;
- every other mark expires after ``MARK_TTL_S``, a run's lease
  (``COUNCIL_RUN_LEASE_S``, 300 s; ``COUNCIL_MARK_TTL_S`` sets it apart). A
  message can be taken by a worker that dies before its task starts; Redis
  would hand it out again only after its visibility timeout (30 min), so the
  mark must not wait for that: once it expires the sweep sends the work again.
  A message that was only slow to start (a long queue) is then sent twice,
  which is harmless — a run's attempts are fenced, the committer is
  idempotent, a continuation is taken once — and at most once per lifetime.

A task whose retries are spent leaves its ids unmarked, so the sweep finds
the work at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

import redis

from council import config

RUN = "council:run-waiting:"
EVALUATION = "council:evaluation-waiting:"
CASCADE = "council:cascade-waiting:"
REVERIFICATION = "council:reverification-waiting:"


def mark_ttl_s() -> int:
    """``MARK_TTL_S``: a mark's lifetime under this process's settings."""
    return config.mark_ttl_s()


def retry_mark_ttl_s() -> int:
    """``RETRY_MARK_TTL_S``: a retry's longest countdown, and time to start it: a minute, or one
    mark lifetime when that is shorter (a retry whose worker died is then sent again as soon as
    any other orphaned work would be)."""
    return int(config.retry_policy().cap_s) + min(60, mark_ttl_s())


def __getattr__(name: str) -> int:
    """``MARK_TTL_S`` and ``RETRY_MARK_TTL_S``, from the settings when asked for (not at import)."""
    if name == "MARK_TTL_S":
        return mark_ttl_s()
    if name == "RETRY_MARK_TTL_S":
        return retry_mark_ttl_s()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Marks:
    def __init__(self, client: Any | None, prefix: str) -> None:
        self._client = client
        self._prefix = prefix

    @property
    def coalescing(self) -> bool:
        """False without Redis: every id then counts as having nothing waiting."""
        return self._client is not None

    def mark(self, ids: Sequence[str], *, ttl_s: int | None = None) -> list[str]:
        """The ids that had nothing waiting (now marked as waiting), for ``ttl_s`` (default: MARK_TTL_S)."""
        if self._client is None or not ids:
            return list(ids)
        ttl_s = mark_ttl_s() if ttl_s is None else ttl_s
        pipe = self._client.pipeline(transaction=False)
        for waiting_id in ids:
            pipe.set(self._prefix + waiting_id, 1, nx=True, ex=ttl_s)
        return [i for i, was_set in zip(ids, pipe.execute(), strict=True) if was_set]

    def unmark(self, ids: Sequence[str]) -> None:
        if self._client is not None and ids:
            self._client.delete(*(self._prefix + i for i in ids))

    @contextmanager
    def sending(self, ids: Sequence[str]) -> Iterator[list[str]]:
        """Mark ``ids`` and yield those that had nothing waiting, for the caller to send.
        Should sending fail, they are unmarked again: a mark without its message would
        keep the sweep away from the work until it expired."""
        fresh = self.mark(list(dict.fromkeys(ids)))
        try:
            yield fresh
        except BaseException:
            self.unmark(fresh)
            raise


@cache
def marks_for(broker_url: str, prefix: str) -> Marks:
    if broker_url.startswith(("redis://", "rediss://", "unix://")):
        return Marks(redis.Redis.from_url(broker_url), prefix)
    return Marks(None, prefix)
