"""One LISTEN connection per process, fanned out to the streams of each thread.

Every insert into ``events`` sends ``NOTIFY council_events`` with the event's
id, thread and kind (trigger ``council_notify_event_v1``). The hub only wakes
the subscribers of that thread; they read the events themselves from the
ledger, so a burst of notifications costs one read, and nothing is lost while
the connection is down: after a reconnect every subscriber is woken to catch up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterator
from uuid import UUID

import psycopg

CHANNEL = "council_events"
log = logging.getLogger(__name__)


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
    def __init__(self, conninfo: str, *, max_backoff_s: float = 10.0) -> None:
        self._conninfo = conninfo  # holds a password: never logged
        self._max_backoff_s = max_backoff_s
        self._subscribers: dict[UUID, set[Subscription]] = {}
        self._listening = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Listen from a task of the running loop (an app may be started on several loops in turn)."""
        if not self.running:
            self._listening = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._listen(), name="council-event-hub")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._listening.clear()

    async def ready(self, timeout: float) -> bool:
        """Wait until the LISTEN is in place (False if it is not within ``timeout``)."""
        try:
            async with asyncio.timeout(timeout):
                await self._listening.wait()
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

    def notify(self, payload: str) -> None:
        """Wake the subscribers of the thread a notification names."""
        try:
            thread_id = UUID(str(json.loads(payload)["thread_id"]))
        except (ValueError, KeyError, TypeError):
            return  # an event of no thread, or a payload not ours
        for subscription in self._subscribers.get(thread_id, ()):
            subscription.wake()

    def _wake_all(self) -> None:
        for subscribers in self._subscribers.values():
            for subscription in subscribers:
                subscription.wake()

    async def _listen(self) -> None:
        backoff = 0.5
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self._listening.set()
                    backoff = 0.5
                    self._wake_all()  # whatever happened while we were not listening
                    async for note in conn.notifies():
                        self.notify(note.payload)
            except (psycopg.Error, OSError) as exc:
                log.warning("event listener: %s; reconnecting in %.1f s", type(exc).__name__, backoff)
            self._listening.clear()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self._max_backoff_s)
