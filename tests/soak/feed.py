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


class Writer:
    """A client writing all the time, in process, through the multi-host URL: a small evidence
    item on a probe thread of its own every ``every_s``, retried after any error. Each write it
    was told committed is an acknowledgement (``acked``: (sent, acked wall time, evidence id)),
    checked after the heal like every other (checker_log._check_acked), and the times give each
    failover's resumption: the last write acknowledged before the primary was lost to the first
    acknowledged after."""

    def __init__(self, app_url: str, seed: int, every_s: float = 0.2) -> None:
        self.url = app_url
        self.seed = seed
        self.every_s = every_s
        self.acked: list[tuple[float, float, str]] = []
        self.failed = 0
        self.thread_id: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="probe-writer")

    def start(self) -> None:
        from council.ledger.unit import UnitOfWork
        from council.services.threads import create_thread

        made = create_thread(
            UnitOfWork(url=self.url),
            title=f"soak seed {self.seed}: probe writes",
            objective="a client writing through failovers",
            actor="cli:soak-writer",
        )
        self.thread_id = str(made.id)
        self._thread.start()

    def _run(self) -> None:
        from council.ledger.unit import UnitOfWork
        from council.services.evidence import EvidenceInput, add_evidence

        uow = UnitOfWork(url=self.url)
        i = 0
        while not self._stop.is_set():
            i += 1
            sent = time.time()
            try:
                got = add_evidence(
                    uow,
                    str(self.thread_id),
                    EvidenceInput(
                        text=f"soak seed {self.seed}: probe write {i} at {sent:.3f}", title=f"P{i}"
                    ),
                    actor="cli:soak-writer",
                )
                self.acked.append((sent, time.time(), str(got.id)))
            except Exception:  # the primary away: try again (a new item: the same text is one row)
                self.failed += 1
            self._stop.wait(self.every_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=120)

    def resumption(self, lost_wall: float) -> dict[str, Any]:
        before = [a for _, a, _ in self.acked if a < lost_wall]
        after = [a for s, a, _ in self.acked if s >= lost_wall or a > lost_wall]
        return {
            "last_ack_before_s": round(lost_wall - max(before), 2) if before else None,
            "resumption_s": round(min(after) - max(before), 2) if before and after else None,
        }

    def acked_ops(self) -> list[dict[str, Any]]:
        """The writes acknowledged, as the schedule records an acknowledged op."""
        return [
            {"type": "ack", "op": "probe-write", "t": a, "ids": [("evidence", ident)]}
            for _, a, ident in self.acked
        ]


class Clients:
    """The replicated soak's in-process clients of one schedule: the live reader and the writer."""

    def __init__(self, app_url: str, thread_id: str, seed: int) -> None:
        self.reader = FeedReader(app_url, thread_id)
        self.writer = Writer(app_url, seed)

    def start(self) -> None:
        self.reader.start()
        self.writer.start()

    def stop_and_check(self, owner_url: str) -> tuple[list[Anomaly], dict[str, Any]]:
        from tests.soak.checker_log import _check_acked

        self.writer.stop()
        self.reader.stop()
        out, stats = check_feed(owner_url, self.reader)
        acked: dict[str, Any] = {}
        with psycopg.connect(owner_url, connect_timeout=5) as conn:
            _check_acked(conn, self.writer.acked_ops(), out, acked)
        stats.update(
            probe_writes_acked=acked.get("acked_ids_checked", 0), probe_writes_failed=self.writer.failed
        )
        return out, stats
