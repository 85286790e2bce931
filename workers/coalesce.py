"""Coalescing requests: one waiting evaluation per node version, one waiting
re-verification per memory item.

Every run enqueues an evaluation of each version it touched, and a council's
runs touch the same versions: without coalescing the commit queue fills with
copies of the same work. A version is *marked* in Redis (``SET NX`` with an
expiry) when its evaluation is enqueued, and unmarked when an evaluation task
*starts*, before it reads anything. A claim that lands after the start finds
no mark and enqueues a fresh evaluation, so no change goes unevaluated; the
expiry covers a task lost with its worker. With a broker other than Redis
nothing is coalesced (every request is enqueued, as before). Re-verification
requests (every read of provisional memory makes one) are coalesced the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import redis

EVALUATION = "council:evaluation-waiting:"
REVERIFICATION = "council:reverification-waiting:"
MARK_TTL_S = 1800  # longer than a task's hard time limit (workers/app.py)


class Marks:
    def __init__(self, client: Any | None, prefix: str) -> None:
        self._client = client
        self._prefix = prefix

    def mark(self, version_ids: Sequence[str]) -> list[str]:
        """The ids that had nothing waiting (now marked as waiting)."""
        if self._client is None or not version_ids:
            return list(version_ids)
        pipe = self._client.pipeline(transaction=False)
        for version_id in version_ids:
            pipe.set(self._prefix + version_id, 1, nx=True, ex=MARK_TTL_S)
        return [v for v, was_set in zip(version_ids, pipe.execute(), strict=True) if was_set]

    def unmark(self, version_ids: Sequence[str]) -> None:
        if self._client is not None and version_ids:
            self._client.delete(*(self._prefix + v for v in version_ids))


@cache
def marks_for(broker_url: str, prefix: str) -> Marks:
    if broker_url.startswith(("redis://", "rediss://", "unix://")):
        return Marks(redis.Redis.from_url(broker_url), prefix)
    return Marks(None, prefix)
