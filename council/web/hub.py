"""One poll of the event log per process, fanned out to the streams of each thread.

Writers notify nobody (a NOTIFY in the writer's transaction serializes every
commit that sends one, revision 0015). Instead the hub asks the ledger, every
``poll_s``, which threads have events that *settled* since its last look
(:mod:`council.domain.tail`: one indexed range read of what settled since) and
wakes only those threads' subscribers; they read their events themselves, so a
burst of events costs one read. Nothing is lost while the database is away: the
horizon stays where it was, and the first poll that answers reports everything
since.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from uuid import UUID

from council.domain.tail import Settled
from council.errors import CouncilError

log = logging.getLogger(__name__)

Poll = Callable[[int | None], Settled]  # council.services.threads.settled_threads, bound to its uow


class Subscription:
    """A stream's mailbox: set when its thread has something new (or may have)."""

    def __init__(self, thread_id: UUID) -> None:
        self.thread_id = thread_id
        self._wake = asyncio.Event()

    def wake(self) -> None:
        self._wake.set()

    async def wait(self, timeout: float) -> bool:
        """True when woken, False when ``timeout`` passed first."""
        try:
            async with asyncio.timeout(timeout):
                await self._wake.wait()
        except TimeoutError:
            return False
        self._wake.clear()
        return True


class EventHub:
    def __init__(self, poll: Poll, *, poll_s: float = 0.25, max_backoff_s: float = 10.0) -> None:
        self._poll = poll
        self._poll_s = poll_s
        self._max_backoff_s = max_backoff_s
        self._subscribers: dict[UUID, set[Subscription]] = {}
        self._polling = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Poll from a task of the running loop (an app may be started on several loops in turn)."""
        if not self.running:
            self._polling = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run(), name="council-event-hub")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._polling.clear()

    async def ready(self, timeout: float) -> bool:
        """Wait until the hub holds a horizon (False if it does not within ``timeout``)."""
        try:
            async with asyncio.timeout(timeout):
                await self._polling.wait()
        except TimeoutError:
            return False
        return True

    @contextlib.contextmanager
    def subscribe(self, thread_id: UUID) -> Iterator[Subscription]:
        subscription = Subscription(thread_id)
        self._subscribers.setdefault(thread_id, set()).add(subscription)
        try:
            yield subscription
        finally:
            subscribers = self._subscribers.get(thread_id, set())
            subscribers.discard(subscription)
            if not subscribers:
                self._subscribers.pop(thread_id, None)

    def subscriber_count(self) -> int:
        return sum(len(s) for s in self._subscribers.values())

    def wake(self, thread_ids: frozenset[UUID]) -> None:
        """Wake the subscribers of the threads that have settled events."""
        for thread_id in thread_ids:
            for subscription in self._subscribers.get(thread_id, ()):
                subscription.wake()

    async def _run(self) -> None:
        horizon: int | None = None
        backoff = 0.5
        while True:
            try:
                # Every poll after the first reads from the last horizon, subscribers or
                # not: a stream that subscribes while a poll is under way is still woken
                # for whatever settles after its own first read.
                settled = await asyncio.to_thread(self._poll, horizon)
            except CouncilError as exc:  # the database away: keep the horizon, report later
                log.warning("event poll: %s; retrying in %.1f s", type(exc).__name__, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff_s)
                continue
            backoff = 0.5
            horizon = settled.horizon
            self._polling.set()
            self.wake(settled.thread_ids)
            await asyncio.sleep(self._poll_s)
