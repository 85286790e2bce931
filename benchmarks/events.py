"""The event log's write cost and the live stream's delay (migration 0015).

Two measures, in one run:

* Notifying commits. pgbench, ``CLIENTS`` clients, each transaction one event
  insert, on a database at revision 0014 (a per-row NOTIFY trigger: every
  commit that notified takes the server's notify-queue lock through its WAL
  flush) and one at head (no NOTIFY), alternated ``ROUNDS`` times. Reported:
  tps of each and ``commit_ratio`` (head ÷ 0014, the medians), no target.
* Delivery. A stream whose keep-alives are 30 s apart, so only the hub's poll
  (``COUNCIL_EVENT_POLL_S``, 0.25 s) wakes it; an event committed every
  0.37 s (off the poll's phase), ``EVENTS`` times; the delay from the commit
  returning to its SSE frame arriving. Target: p95 ≤ 1 s (``delivery_p95_s``).

Every event written is one a thread can hold: ``thread.question_asked`` with its question
(since revision 0041 the database refuses an unknown kind, or a payload that does not fit
its kind, and the head database pays that check on every insert). A smoke run
(``COUNCIL_BENCH_SMOKE``) runs 2 clients for 1 s, once, and streams 3 events.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from typing import Any

# A kind and payload both revisions accept (head checks every event's payload against its kind).
KIND = "thread.question_asked"
PAYLOAD = (
    f"INSERT INTO events (kind, actor, payload) VALUES ('{KIND}', 'pgbench', '{{\"question\": \"n\"}}');\n"
)
CLIENTS = 64
SECONDS = 5
ROUNDS = 2
EVENTS = 30
TARGET_P95_S = 1.0


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _commits() -> dict[str, Any]:
    from benchmarks.commit import run_pgbench
    from benchmarks.harness import bench_database, sized

    clients, seconds = sized(CLIENTS, 2), sized(SECONDS, 1)
    tps: dict[str, list[float]] = {"0014": [], "head": []}
    failed = 0
    with bench_database("0014") as (notifying, server), bench_database() as (quiet, _):
        for _ in range(sized(ROUNDS, 1)):
            for revision, url in (("0014", notifying), ("head", quiet)):
                measured = run_pgbench(url, PAYLOAD, clients, seconds)
                tps[revision].append(round(measured["tps"], 1))
                failed += measured["failed"]
    ratio = statistics.median(tps["head"]) / statistics.median(tps["0014"])
    return {
        "server": server,
        "clients": clients,
        "seconds": seconds,
        "tps": tps,
        "failed_transactions": failed,
        "ratio": round(ratio, 2),
    }


def _delivery() -> dict[str, Any]:
    import psycopg
    from fastapi.testclient import TestClient

    from benchmarks.harness import bench_database, sized
    from council.bootstrap import bootstrap
    from council.services.threads import create_thread
    from council.web.app import create_app
    from council.web.security import Policy
    from tests.engines import engine_for, uow_of

    delays: list[float] = []
    with bench_database() as (url, _), psycopg.connect(url, autocommit=True) as writer:
        thread = create_thread(uow_of(engine_for(url)), title="stream", objective="delay", actor="bench")
        app = create_app(bootstrap(url, scheduler=lambda uow: None), policy=Policy(), keepalive_s=30.0)
        with (
            TestClient(app, base_url="http://127.0.0.1") as client,
            client.stream("GET", f"/threads/{thread.id}/stream") as response,
        ):
            lines = response.iter_lines()
            next(line for line in lines if line.startswith(": listening"))
            for n in range(sized(EVENTS, 3)):
                time.sleep(0.37)
                writer.execute(
                    "INSERT INTO events (thread_id, kind, actor, payload) VALUES (%s, %s, 'bench', %s)",
                    (thread.id, KIND, json.dumps({"question": f"Question {n}?"})),
                )
                committed = time.monotonic()
                next(line for line in lines if line.startswith("data: "))
                delays.append(time.monotonic() - committed)
    delays.sort()
    return {
        "events": len(delays),
        "delivery_p50_s": round(statistics.median(delays), 3),
        "delivery_p95_s": round(delays[int(0.95 * (len(delays) - 1))], 3),
        "delivery_max_s": round(delays[-1], 3),
    }


def run() -> dict[str, Any]:
    load = _load()
    commits = _commits()
    delivery = _delivery()
    return {
        "benchmark": "events",
        "ok": delivery["delivery_p95_s"] <= TARGET_P95_S and commits["failed_transactions"] == 0,
        "target": {"delivery_p95_s": TARGET_P95_S},
        "commits": commits,
        "commit_ratio": commits["ratio"],
        **delivery,
        "load": load,
        "load_after": _load(),
    }
