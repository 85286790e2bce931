"""Latency-bound throughput: runs per second against the limit N / L when every
model call waits L seconds and N runs are in flight on threads workers.

With real models a run spends its time waiting for the model, so what matters
is how close Council gets to N / L. The simulated provider waits
``COUNCIL_SIM_LATENCY`` (here L = 2 s, spent sleeping) per call. Two shapes,
each measured in the same run on the same broker and database:

- N = 64: one worker, ``council worker --pool threads --concurrency 64``;
- N = 256: four such workers (256 threads).

Each shape sends ``WAVES`` × N runs at once (spread: one proposition per
thread, one dispatch of 8 simulated agents per thread, every run claiming on
its thread's node), so N runs stay in flight for about ``WAVES`` × L seconds;
the clock runs from the send until every run is terminal. Reported: runs/s ÷
(N / L) (keys ``ratio_n64``, ``ratio_n256``; targets ≥ 0.9 and ≥ 0.8), the
worker processes' CPU and Postgres's CPU per run (psutil), and p50/p95 from
the send to a run's claims being visible (their transaction's time on the
database clock). The commit queue is served by the same workers; its drain
time is reported beside.

Postgres CPU is the whole server's when it runs on this machine (the postmaster,
its processes, and the backends that exited: ``harness.server_cpu_s``), since a
pool smaller than its threads opens and closes connections and the backends it
closes took their CPU with them from a per-backend reading.

A batch of ``WAVES`` × N runs also spends time filling (the first wave's runs
all claim and compile at once) and draining (the last wave's answers all land
at once), when fewer than N runs wait on the model. So each shape then sends a
longer batch (``STEADY_WAVES`` × N) to the same workers and reads from its
timeline the rate while every thread had a run in flight
(:func:`steady_rate`): ``steady_ratio_n64`` and ``steady_ratio_n256`` are that
rate ÷ (N / L), and ``fill_drain_s`` is what the short batch took beyond its
runs at that rate (negative when the long batch ran slower than the short one:
a disturbed long batch, whose steady figures then say nothing).
``COUNCIL_BENCH_LATENCY_S`` changes L; ``COUNCIL_BENCH_LATENCY_SHAPES`` (e.g.
``64``) runs fewer shapes. A smoke run (``COUNCIL_BENCH_SMOKE``) runs one shape, N = 8
on one worker of 8 threads, L = 0.1 s, one wave and a steady batch of three.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

import redis
from sqlalchemy import Engine, text

from benchmarks.dispatch import (
    _drained,
    _environ,
    _terminal,
    _tree_cpu_s,
    _until,
    _wait_for_workers,
    bench_redis,
)
from benchmarks.harness import bench_database, postgres_cpu_reader, sized
from council.adapters.scheduler import Recorder
from tests.builders import Ledger
from tests.engines import engine_for, uow_of
from tests.processes import stop_groups

AGENTS = [f"lat{i}" for i in range(1, 9)]
PROVIDERS = ("anthropic", "openai", "zhipu")
LATENCY_S = 2.0
WAVES = 3
# The longer batch the steady rate is read from (its first and last wave are fill and drain).
STEADY_WAVES = 8
SHAPES = {64: 1, 256: 4}  # runs in flight: worker processes of 64 threads
SMOKE_SHAPES = {8: 1}  # a smoke run's: one worker of 8 threads
# Database connections per worker process, at most. A run holds one only inside its short
# transactions, never across the model call, so fewer than its threads do. A pool may
# open twice its size (council.ledger.db: overflow = size), so the shape takes what the
# server's max_connections leaves (`_pool_size`): 4 × 2 × 16 would pass the embedded
# server's 100.
POOL_PER_WORKER = {64: 64, 256: 16}
# Connections left for this process, the workers' other pools and the server's own.
CONNECTION_RESERVE = 16
THREADS_PER_WORKER = 64
TARGETS = {64: 0.9, 256: 0.8}
QUEUES = ("runs", "commit")


def _profiles(home: Path) -> Path:
    path = home / "profiles.toml"
    path.write_text(
        "".join(
            f'[profiles.{name}]\nmodel = "council-sim/{name}"\n'
            f'provider = "{PROVIDERS[i % len(PROVIDERS)]}"\n\n'
            for i, name in enumerate(AGENTS)
        ),
        encoding="utf-8",
    )
    return path


@contextmanager
def _workers(
    env: dict[str, str], home: Path, count: int, tag: str, pool: int, threads: int = THREADS_PER_WORKER
) -> Iterator[list[subprocess.Popen[bytes]]]:
    argv = [sys.executable, "-m", "council.cli", "worker", "--queues", ",".join(QUEUES)]
    argv += ["--pool", "threads", "--concurrency", str(threads)]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(count):
            with (home / f"worker-{tag}-{i}.log").open("wb") as log:
                procs.append(
                    subprocess.Popen(
                        [*argv, "--name", f"lat-{tag}-{i}@%h"],
                        env={**env, "COUNCIL_DB_POOL_SIZE": str(pool)},
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        yield procs
    finally:
        stop_groups(procs, grace_s=30)


def _shapes() -> dict[int, int]:
    """Runs in flight → worker processes (of ``n / workers`` threads each)."""
    return sized(SHAPES, SMOKE_SHAPES)


def _pool_size(engine: Engine, n: int) -> tuple[int, int]:
    """(each worker's pool size, the server's max_connections): POOL_PER_WORKER[n], or
    less when the workers' pools at their overflow would pass what the server admits."""
    with engine.connect() as conn:
        limit = int(conn.execute(text("SHOW max_connections")).scalar_one())
        in_use = int(conn.execute(text("SELECT count(*) FROM pg_stat_activity")).scalar_one())
    room = (limit - in_use - CONNECTION_RESERVE) // (2 * _shapes()[n])
    return max(2, min(POOL_PER_WORKER.get(n, n), room)), limit


def _seed(engine: Engine, threads: int) -> list[UUID]:
    made = []
    for i in range(threads):
        ledger = Ledger.new(engine, title=f"latency benchmark {i}", evidence_items=2)
        ledger.node(f"Proposition {i}: the adapter returns the same rows", cites=[ledger.evidence[0]])
        made.append(ledger.thread_id)
    return made


def _create_runs(engine: Engine, threads: list[UUID]) -> list[UUID]:
    from council.services.dispatch import dispatch

    created, uow = Recorder(), uow_of(engine)
    for thread in threads:
        dispatch(uow, created, thread, AGENTS, mode="independent", rounds=1, actor="bench")
    return list(created.runs)


# Seconds from the send (:sent, the database clock) to each run's end, and to its claims
# being visible (their transaction's time).
ENDS = (
    "SELECT extract(epoch FROM finished_at - :sent) FROM agent_runs "
    "WHERE thread_id = ANY(:t) AND finished_at IS NOT NULL"
)
VISIBLE = (
    "SELECT extract(epoch FROM min(c.created_at) - :sent) AS s FROM claims c "
    "JOIN agent_runs r ON r.id = c.run_id WHERE r.thread_id = ANY(:t) GROUP BY r.id"
)


def _seconds(engine: Engine, query: str, threads: list[UUID], sent_at: Any) -> list[float]:
    """One of the timelines above for the runs of ``threads``, sorted."""
    with engine.connect() as conn:
        rows = conn.execute(text(query), {"t": threads, "sent": sent_at}).scalars()
        return sorted(float(s) for s in rows)


def steady_rate(ends: list[float], n: int) -> float | None:
    """Runs ended per second while all ``n`` workers' threads had a run in flight: between
    the n-th end (every thread has finished its first run and taken its next) and the
    (M − n)-th end (after it the last waiting run has started, so threads start to fall
    idle). None when the batch is too short to have such a window (M ≤ 2n)."""
    m, ordered = len(ends), sorted(ends)
    if m <= 2 * n:
        return None
    first, last = ordered[n - 1], ordered[m - n - 1]
    return (m - 2 * n) / (last - first) if last > first else None


class _Cpu:
    """CPU readings of a shape: its worker processes, and Postgres (``postgres_cpu_reader``)."""

    def __init__(self, engine: Engine, procs: list[subprocess.Popen[bytes]]) -> None:
        self._postgres, self.scope = postgres_cpu_reader(engine)
        self._procs = procs
        self.worker, self.postgres = _tree_cpu_s(procs), self._postgres()

    def spent(self) -> tuple[float, float]:
        return _tree_cpu_s(self._procs) - self.worker, self._postgres() - self.postgres


def _batch(
    engine: Engine,
    scheduler: Any,
    client: redis.Redis,
    procs: list[subprocess.Popen[bytes]],
    n: int,
    waves: int,
) -> dict[str, Any]:
    """Send ``waves`` × n runs at once and time them to their end (then the commit queue's
    drain): their timeline on the database clock, and the CPU they cost."""
    threads = _seed(engine, waves * n // len(AGENTS))
    run_ids = _create_runs(engine, threads)
    cpu = _Cpu(engine, procs)
    with engine.connect() as conn:
        sent_at = conn.execute(text("SELECT clock_timestamp()")).scalar_one()
    started = time.perf_counter()
    scheduler.enqueue_runs(run_ids)
    _until(lambda: _terminal(engine, threads) == len(run_ids), "runs", poll_s=0.05)
    runs_s = time.perf_counter() - started
    _until(lambda: _drained(client), "consolidations")
    drained_s = time.perf_counter() - started
    worker_cpu, db_cpu = cpu.spent()
    with engine.connect() as conn:
        failed = conn.execute(
            text("SELECT count(*) FROM agent_runs WHERE thread_id = ANY(:t) AND status = 'failed'"),
            {"t": threads},
        ).scalar_one()
    return {
        "runs": len(run_ids),
        "failed": int(failed),
        "runs_s": runs_s,
        "drained_s": drained_s,
        "worker_cpu_s": worker_cpu,
        "postgres_cpu_s": db_cpu,
        "postgres_cpu_scope": cpu.scope,
        "visible": _seconds(engine, VISIBLE, threads, sent_at),
        "ends": _seconds(engine, ENDS, threads, sent_at),
    }


def _shape(
    engine: Engine, env: dict[str, str], home: Path, broker: str, n: int, latency: float
) -> dict[str, Any]:
    from council.adapters.celery_app import connect
    from council.bootstrap import bootstrap

    workers = _shapes()[n]
    threads = n // workers
    scheduler = bootstrap(engine.url.render_as_string(hide_password=False)).required_scheduler()
    client = redis.Redis.from_url(broker)
    pool, max_connections = _pool_size(engine, n)
    steady_waves = sized(STEADY_WAVES, 3)
    with _workers(env, home, workers, str(n), pool, threads) as procs:
        _wait_for_workers(connect(broker), workers)
        batch = _batch(engine, scheduler, client, procs, n, sized(WAVES, 1))
        long = _batch(engine, scheduler, client, procs, n, steady_waves)
    m, runs_s, visible = batch["runs"], batch["runs_s"], batch["visible"]
    limit = n / latency
    rate = steady_rate(long["ends"], n)
    cpu_ms = 1000 * (batch["worker_cpu_s"] + batch["postgres_cpu_s"]) / m
    cores = os.cpu_count() or 1
    return {
        "in_flight": n,
        "workers": f"{workers} × `council worker --pool threads --concurrency {threads}`",
        "db_pool_per_worker": pool,
        "server_max_connections": max_connections,
        "runs": m,
        "failed_runs": batch["failed"],
        "runs_s": round(runs_s, 2),
        "runs_per_s": round(m / runs_s, 2),
        "limit_runs_per_s": round(limit, 2),
        "ratio": round((m / runs_s) / limit, 3),
        "commit_queue_drained_s": round(batch["drained_s"], 2),
        "worker_cpu_ms_per_run": round(1000 * batch["worker_cpu_s"] / m, 2),
        "postgres_cpu_ms_per_run": round(1000 * batch["postgres_cpu_s"] / m, 2),
        "postgres_cpu_scope": batch["postgres_cpu_scope"],
        # Runs/s this machine's cores allow at that CPU a run (workers and Postgres share them).
        "cpu_ceiling_ratio": round(1000 * cores / cpu_ms / limit, 3),
        "claims_visible_p50_s": round(statistics.median(visible), 2) if visible else None,
        "claims_visible_p95_s": round(visible[int(0.95 * (len(visible) - 1))], 2) if visible else None,
        "target_ratio": TARGETS.get(n),
        # The same workers, a longer batch: the rate while every thread has a run in flight,
        # and what the short batch spent beyond its runs at that rate (filling and draining).
        "steady_waves": steady_waves,
        "steady_runs": long["runs"],
        "steady_failed_runs": long["failed"],
        "steady_runs_per_s": round(rate, 2) if rate else None,
        "steady_ratio": round(rate / limit, 3) if rate else None,
        "fill_drain_s": round(runs_s - m / rate, 2) if rate else None,
        "steady_batch_ratio": round((long["runs"] / long["runs_s"]) / limit, 3),
        "steady_worker_cpu_ms_per_run": round(1000 * long["worker_cpu_s"] / long["runs"], 2),
        "steady_postgres_cpu_ms_per_run": round(1000 * long["postgres_cpu_s"] / long["runs"], 2),
    }


def run() -> dict[str, Any]:
    latency = float(os.environ.get("COUNCIL_BENCH_LATENCY_S", sized(LATENCY_S, 0.1)))
    wanted = [
        int(s)
        for s in os.environ.get("COUNCIL_BENCH_LATENCY_SHAPES", ",".join(map(str, _shapes()))).split(",")
        if s.strip()
    ]
    load = os.getloadavg()
    shapes: dict[int, dict[str, Any]] = {}
    with ExitStack() as stack:
        broker, redis_source = stack.enter_context(bench_redis())
        url, server = stack.enter_context(bench_database())
        home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="council-bench-latency-")))
        env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
        env.update(
            COUNCIL_DATABASE_URL=url,
            COUNCIL_BROKER_URL=broker,
            COUNCIL_HOME=str(home),
            COUNCIL_PROFILES=str(_profiles(home)),
            COUNCIL_SIMULATE="1",
            COUNCIL_OFFLINE="1",
            COUNCIL_SIM_LATENCY=f"{latency:g}",
            NO_COLOR="1",
        )
        stack.enter_context(_environ({k: v for k, v in env.items() if k.startswith("COUNCIL_")}))
        engine = engine_for(url)
        for n in wanted:
            shapes[n] = _shape(engine, env, home, broker, n, latency)
            redis.Redis.from_url(broker).flushdb()
    result: dict[str, Any] = {
        "benchmark": "latency",
        "latency_s": latency,
        "waves": sized(WAVES, 1),
        "shapes": {str(n): s for n, s in shapes.items()},
        "target": {f"ratio_n{n}": t for n, t in TARGETS.items()},
        "load": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "server": server,
        "redis": redis_source,
    }
    for n, shape in shapes.items():
        result[f"ratio_n{n}"] = shape["ratio"]
        result[f"steady_ratio_n{n}"] = shape["steady_ratio"]
    result["ok"] = all(shape["ratio"] >= TARGETS.get(n, 1.0) for n, shape in shapes.items()) and len(
        shapes
    ) == len(TARGETS)
    return result
