"""A live reader of a thread's events across failovers, and what it saw checked against the ledger.

The reader does what the live page does (council/web/routes_stream.py): it pages
the thread's settled events with ``tail_events`` on a pooled engine of its own
(the multi-host URL), and when a read fails — the primary lost mid-stream — it
reconnects as an EventSource does, with the last event id it received
(``tail_from(after=Last-Event-ID)``, the (tx, id) cursor of that event). Every
event it receives is an acknowledgement a client saw: a run end, a claim, a
consolidation on the screen.

After the heal (:func:`check_feed`): every event the reader saw is in the ledger as
it saw it (same kind and subject: none lost, no id reused for another event), it saw
none twice, and it saw every event of the thread (no gap across a promotion).
"""

from __future__ import annotations

import threading
import time
from typing import Any
from uuid import UUID

import psycopg

from tests.soak.checker_log import Anomaly, _a, _rows


class FeedReader:
    def __init__(self, app_url: str, thread_id: str, poll_s: float = 0.5) -> None:
        self.url = app_url
        self.thread_id = UUID(thread_id)
        self.poll_s = poll_s
        self.seen: list[dict[str, Any]] = []  # {"id", "kind", "subject_id", "at"} in the order received
        self.reconnects = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="feed-reader")

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        from council.ledger.unit import UnitOfWork
        from council.services.threads import tail_events, tail_from

        uow = UnitOfWork(url=self.url)
        cursor = None
        quiet = 0
        while True:
            try:
                if cursor is None:  # (re)connect: after the last event received, or the thread's start
                    cursor = tail_from(uow, self.thread_id, after=self.seen[-1]["id"] if self.seen else 0)
                page = tail_events(uow, self.thread_id, cursor, limit=200)
                cursor = page.cursor
                for e in page.events:
                    self.seen.append(
                        {"id": e.id, "kind": e.kind, "subject_id": str(e.subject_id), "at": time.time()}
                    )
                quiet = 0 if page.events else quiet + 1
                if page.full:
                    continue
            except Exception as exc:  # the stream ends; the browser reconnects with Last-Event-ID
                self.errors.append(f"{type(exc).__name__}: {exc}".splitlines()[0][:200])
                self.reconnects += 1
                cursor = None
            if self._stop.is_set() and quiet >= 2:
                return
            time.sleep(self.poll_s)

    def stop(self, timeout_s: float = 60) -> None:
        """Drain: read until two empty pages in a row after the stop, then end."""
        self._stop.set()
        self._thread.join(timeout=timeout_s)


def check_feed(owner_url: str, reader: FeedReader) -> tuple[list[Anomaly], dict[str, Any]]:
    out: list[Anomaly] = []
    with psycopg.connect(owner_url, connect_timeout=5) as conn:
        ledger = {
            int(r["id"]): r
            for r in _rows(
                conn,
                "SELECT id, kind, CAST(subject_id AS text) AS subject_id FROM events WHERE thread_id = %(t)s",
                t=str(reader.thread_id),
            )
        }
    ids = [s["id"] for s in reader.seen]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        out.append(
            _a("e", "feed_duplicate", f"the live reader received events {twice[:10]} twice", twice[:10])
        )
    for s in reader.seen:
        row = ledger.get(s["id"])
        if row is None:
            out.append(
                _a(
                    "g",
                    "seen_event_lost",
                    f"event {s['id']} ({s['kind']}) was shown to a reader; it is not "
                    "in the ledger after the failover",
                    [s["id"]],
                )
            )
        elif (row["kind"], str(row["subject_id"])) != (s["kind"], s["subject_id"]):
            out.append(
                _a(
                    "g",
                    "seen_event_changed",
                    f"event {s['id']} was shown as {s['kind']}; the ledger now has "
                    f"{row['kind']} under that id",
                    [s["id"]],
                )
            )
    missed = sorted(set(ledger) - set(ids))
    if missed:
        out.append(
            _a(
                "e",
                "feed_gap",
                f"{len(missed)} event(s) of the thread never reached the live reader: {missed[:10]}",
                missed[:10],
            )
        )
    stats = {"feed_events_seen": len(ids), "feed_reconnects": reader.reconnects}
    return out, stats
