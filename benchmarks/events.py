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
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

PAYLOAD = "INSERT INTO events (kind, actor, payload) VALUES ('bench.appended', 'pgbench', '{\"n\": 1}');\n"
CLIENTS = 64
SECONDS = 5
ROUNDS = 2
EVENTS = 30
TARGET_P95_S = 1.0


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _commits() -> dict[str, Any]:
    from benchmarks.commit import run_pgbench
    from benchmarks.harness import bench_database

    tps: dict[str, list[float]] = {"0014": [], "head": []}
    with bench_database("0014") as (notifying, server), bench_database() as (quiet, _):
        for _ in range(ROUNDS):
            for revision, url in (("0014", notifying), ("head", quiet)):
                tps[revision].append(round(run_pgbench(url, PAYLOAD, CLIENTS, SECONDS)["tps"], 1))
    ratio = statistics.median(tps["head"]) / statistics.median(tps["0014"])
    return {"server": server, "clients": CLIENTS, "seconds": SECONDS, "tps": tps, "ratio": round(ratio, 2)}


def _delivery() -> dict[str, Any]:
    import psycopg
    from fastapi.testclient import TestClient

    from benchmarks.harness import bench_database
    from council.bootstrap import bootstrap
    from council.web.app import create_app
    from council.web.security import Policy

    delays: list[float] = []
    with bench_database() as (url, _), psycopg.connect(url, autocommit=True) as writer:
        thread = writer.execute(
            "INSERT INTO threads (title, objective, rule_set_id, grouping_algorithm_id) "
            "VALUES ('stream', 'delay', 'council-default-v1', 'indep-v1') RETURNING id"
        ).fetchone()
        assert thread is not None
        app = create_app(bootstrap(url, scheduler=lambda uow: None), policy=Policy(), keepalive_s=30.0)
        with (
            TestClient(app, base_url="http://127.0.0.1") as client,
            client.stream("GET", f"/threads/{thread[0]}/stream") as response,
        ):
            lines = response.iter_lines()
            next(line for line in lines if line.startswith(": listening"))
            for _ in range(EVENTS):
                time.sleep(0.37)
                writer.execute(
                    "INSERT INTO events (thread_id, kind, actor) VALUES (%s, 'bench.streamed', 'bench')",
                    thread,
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
        "ok": delivery["delivery_p95_s"] <= TARGET_P95_S,
        "target": {"delivery_p95_s": TARGET_P95_S},
        "commits": commits,
        "commit_ratio": commits["ratio"],
        **delivery,
        "load": load,
        "load_after": _load(),
    }
