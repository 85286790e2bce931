"""Where each millisecond of a run's CPU goes in the runs worker, thread by thread and
library by library (issue 36).

The load (issue 36's side-by-side): councils of 3 agents × 2 rounds, one per thread (the
spread shape: one proposition per thread, one dispatch per thread), every agent a *real*
profile (litellm's OpenAI-compatible path over HTTP) served by a local fake chat model
(``tests.fakes.chat_model``: the simulated provider's contract answer to the briefing it
is sent) that waits ``LATENCY_S`` before each answer. One runs worker
(``council worker --queues runs --pool threads --concurrency 48``: at most 48 runs in
flight) and one commit worker (``--queues commit``) serve them; the round-1 runs of every
council are sent at once, each council's round 2 is sent by its workers when round 1 ends.

While the batch runs, py-spy samples every thread of the runs worker (``--threads``, idle
threads left out, without pausing it) and ``/proc`` gives each thread's exact CPU
(``benchmarks.sampling``). Reported, in ms a run: the runs worker's total CPU (its
``/proc/PID/stat`` utime + stime, threads that exited and children included) and its
parts by thread role and by library (they add up to the total), the commit worker's and
Postgres's CPU a run, and the load. After a warm-up council, untimed.

``COUNCIL_BENCH_PROFILE_COUNCILS`` (default 48), ``COUNCIL_BENCH_PROFILE_CONCURRENCY``
(48), ``COUNCIL_BENCH_LATENCY_S`` (0.2) and ``COUNCIL_BENCH_PROFILE_RATE`` (py-spy's
samples a second, 100) change the shape; ``COUNCIL_BENCH_PROFILE_RAW=PATH`` keeps py-spy's
raw samples there; ``COUNCIL_BENCH_PROFILE_PYSPY=0`` measures the
CPU without sampling (py-spy then costs nothing; the figures say so). Target (issue 36):
the runs worker's CPU a run ≤ 12 ms, Postgres's ≤ 6 ms. A smoke run
(``COUNCIL_BENCH_SMOKE``) sends 2 councils to 4 threads, 0.05 s of model latency, and
samples without py-spy when it is not installed (``skipped`` says so).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any
from uuid import UUID

from sqlalchemy import Engine, text

from benchmarks import sampling
from benchmarks.dispatch import _environ, _until, _wait_for_workers, bench_redis
from benchmarks.harness import bench_database, postgres_cpu_reader, sized, smoke
from council.adapters.scheduler import Recorder
from tests.builders import Ledger
from tests.engines import engine_for, uow_of
from tests.fakes.chat_model import chat_model, local_profiles
from tests.processes import stop_groups

AGENTS = ("alpha", "beta", "gamma")
ROUNDS = 2
COUNCILS = 48
CONCURRENCY = 48
LATENCY_S = 0.2
RATE = 100
TARGET_WORKER_MS = 12.0
TARGET_POSTGRES_MS = 6.0
# The steps of a run (``council.services.execution``), first match on a sample's stack wins.
STEPS = (
    ("the model call (gateway.complete: litellm, openai, httpx)", "complete", "council/agents/gateway.py"),
    ("claim, compile and store the request (one transaction)", "_prepare", "council/services/execution.py"),
    (
        "keep the answer (its own transaction: tool rounds, refused answers)",
        "keep_answer",
        "council/services/run_answers.py",
    ),
    ("keep, check and apply (one transaction)", "apply_answer", "council/services/run_calls.py"),
    ("enqueue evaluations (Redis marks, Celery send)", "enqueue_evaluations", "council/adapters/celery.py"),
    ("next round (query, mark queued, Celery send)", "follow_up", "council/services/run_followups.py"),
    ("the rest of execute_run (metrics, redaction…)", "execute_run", "council/services/execution.py"),
    ("Celery's task trace (ack, signals, marks)", "trace_task", "celery/app/trace.py"),
)
TERMINAL = (
    "SELECT count(*) FILTER (WHERE status IN ('succeeded', 'failed')), count(*), "
    "count(*) FILTER (WHERE status = 'failed') FROM agent_runs WHERE thread_id = ANY(:t)"
)


def _int_env(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


@contextmanager
def _worker(
    env: dict[str, str], home: Path, queue: str, concurrency: int
) -> Iterator[subprocess.Popen[bytes]]:
    argv = [sys.executable, "-m", "council.cli", "worker", "--queues", queue]
    argv += ["--pool", "threads", "--concurrency", str(concurrency), "--name", f"profile-{queue}@%h"]
    with (home / f"worker-{queue}.log").open("wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield proc
    finally:
        stop_groups([proc], grace_s=30)


def _councils(engine: Engine, count: int) -> tuple[list[UUID], list[UUID], float]:
    """``count`` threads with one proposition each and one dispatch of the council on each
    (created, not sent): (the threads, their round-1 runs, this thread's CPU seconds in the
    dispatches — what the API server would spend on them)."""
    from council.services.dispatch import dispatch

    threads, created, uow, spent = [], Recorder(), uow_of(engine), 0.0
    for i in range(count):
        ledger = Ledger.new(engine, title=f"worker profile {i}", evidence_items=2)
        ledger.node(f"Proposition {i}: the adapter returns the same rows", cites=[ledger.evidence[0]])
        threads.append(ledger.thread_id)
        began = time.thread_time()
        dispatch(
            uow, created, ledger.thread_id, list(AGENTS), mode="independent", rounds=ROUNDS, actor="bench"
        )
        spent += time.thread_time() - began
    return threads, list(created.runs), spent


TRANSACTIONS = "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"


def _transactions(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(TRANSACTIONS)).scalar_one())


def _progress(engine: Engine, threads: list[UUID]) -> tuple[int, int, int]:
    with engine.connect() as conn:
        done, total, failed = conn.execute(text(TERMINAL), {"t": threads}).one()
    return int(done), int(total), int(failed)


def _variant(spec: str) -> dict[str, str]:
    """``NAME=VALUE,NAME=VALUE`` → the environment of variant B."""
    return dict(item.split("=", 1) for item in spec.split(",") if item.strip())


def _measure(
    engine: Engine,
    env: dict[str, str],
    home: Path,
    broker: str,
    councils: int,
    concurrency: int,
    *,
    sample: bool,
    rate: int,
    postgres: Callable[[], float] | None = None,
) -> dict[str, Any]:
    """Start the two workers, warm them with one council, send ``councils`` councils at once
    and read the CPU they cost (with py-spy's samples when ``sample``); stop the workers.
    ``postgres``: a reading of Postgres's CPU seconds (else ``postgres_cpu_reader``'s)."""
    from council.adapters.celery_app import connect
    from council.bootstrap import bootstrap

    scheduler = bootstrap(env["COUNCIL_DATABASE_URL"]).required_scheduler()
    with ExitStack() as stack:
        runs_worker = stack.enter_context(_worker(env, home, "runs", concurrency))
        commit_worker = stack.enter_context(_worker(env, home, "commit", 4))
        _wait_for_workers(connect(broker), 2)
        # Warm-up: one council, untimed (litellm's first call, pools, the first briefing).
        warm, warm_runs, _ = _councils(engine, 1)
        scheduler.enqueue_runs(warm_runs)
        _until(lambda: (p := _progress(engine, warm))[0] == p[1], "warm-up runs", poll_s=0.1)
        threads, first, dispatch_s = _councils(engine, councils)
        if postgres is None:
            postgres, scope = postgres_cpu_reader(engine)
        else:
            scope = "the backends serving the benchmark's database (pg_stat_activity, polled)"
        out = home / "py-spy.raw"
        out.unlink(missing_ok=True)
        pid = runs_worker.pid
        with sampling.recording(pid, out, rate) if sample else nullcontext() as spy:
            if spy is not None:
                time.sleep(1.0)  # py-spy attached
            before = sampling.thread_cpu_s(pid)
            worker0, split0 = sampling.process_cpu_s(pid), sampling.user_system_s(pid)
            commit0, db0 = sampling.process_cpu_s(commit_worker.pid), postgres()
            spy0 = sampling.process_cpu_s(spy.pid) if spy is not None else 0.0
            xacts0 = _transactions(engine)
            started = time.perf_counter()
            scheduler.enqueue_runs(first)
            _until(lambda: (p := _progress(engine, threads))[0] == p[1], "runs", poll_s=0.05)
            elapsed = time.perf_counter() - started
            after = sampling.thread_cpu_s(pid)
            worker_s, split1 = sampling.process_cpu_s(pid) - worker0, sampling.user_system_s(pid)
            commit_s, db_s = sampling.process_cpu_s(commit_worker.pid) - commit0, postgres() - db0
            spy_s = sampling.process_cpu_s(spy.pid) - spy0 if spy is not None else 0.0
            threads_now = sampling.thread_count(pid)
        time.sleep(1.1)  # Postgres's statistics reach pg_stat_database within a second
        xacts = _transactions(engine) - xacts0
        _, total, failed = _progress(engine, threads)
    stacks = sampling.parse_raw(out.read_text()) if sample and out.exists() else []
    if sample and out.exists() and os.environ.get("COUNCIL_BENCH_PROFILE_RAW"):
        shutil.copyfile(out, os.environ["COUNCIL_BENCH_PROFILE_RAW"])  # py-spy's samples, kept
    return {
        "runs": total,
        "failed_runs": failed,
        "runs_s": round(elapsed, 2),
        "runs_per_s": round(total / elapsed, 2),
        "runs_worker_cpu_ms_per_run": round(1000 * worker_s / total, 2),
        "runs_worker_user_ms_per_run": round(1000 * (split1[0] - split0[0]) / total, 2),
        "runs_worker_system_ms_per_run": round(1000 * (split1[1] - split0[1]) / total, 2),
        "runs_worker_threads": threads_now,
        "commit_worker_cpu_ms_per_run": round(1000 * commit_s / total, 2),
        "dispatch_cpu_ms_per_run": round(1000 * dispatch_s / total, 2),
        "postgres_cpu_ms_per_run": round(1000 * db_s / total, 2),
        "postgres_cpu_scope": scope,
        # Every transaction committed or rolled back in the database over the batch (workers,
        # this process's polling and readings included): the round trips' upper structure.
        "transactions_per_run": round(xacts / total, 1),
        "py_spy": {"sampling": sample, "rate": rate, "cpu_ms_per_run": round(1000 * spy_s / total, 2)},
        "profile": _profile(stacks, before, after, worker_s, total) if sample else None,
    }


def _profile(
    stacks: list[sampling.Stack], before: dict[int, float], after: dict[int, float], cpu_s: float, runs: int
) -> dict[str, Any]:
    profile = sampling.breakdown(stacks, before, after, cpu_s, runs)
    run_ms = profile["by_thread_ms_per_run"].get(sampling.RUN_THREADS, 0.0)
    profile["run_threads_by_step_ms_per_run"] = sampling.by_step(stacks, sampling.RUN_THREADS, run_ms, STEPS)
    return profile


def run() -> dict[str, Any]:
    councils = _int_env("COUNCIL_BENCH_PROFILE_COUNCILS", sized(COUNCILS, 2))
    concurrency = _int_env("COUNCIL_BENCH_PROFILE_CONCURRENCY", sized(CONCURRENCY, 4))
    rate = _int_env("COUNCIL_BENCH_PROFILE_RATE", RATE)
    sample = os.environ.get("COUNCIL_BENCH_PROFILE_PYSPY", "1") != "0"
    latency = float(os.environ.get("COUNCIL_BENCH_LATENCY_S", sized(LATENCY_S, 0.05)))
    ab = _variant(os.environ.get("COUNCIL_BENCH_PROFILE_AB", ""))
    pairs = _int_env("COUNCIL_BENCH_PROFILE_PAIRS", sized(3, 1))
    skipped: dict[str, str] = {}
    if sample and not ab and sampling.py_spy() is None and smoke():
        # A smoke run measures the CPU without the samples, and says so.
        sample = False
        skipped["py-spy"] = "py-spy is not installed (pip install -e '.[profile]'): no samples, no profile"
    if sample and not ab and sampling.py_spy() is None:
        return {"benchmark": "worker-profile", "ok": False, "error": "py-spy is not installed: "
                "pip install -e '.[profile]' (or COUNCIL_BENCH_PROFILE_PYSPY=0)"}  # fmt: skip
    load = os.getloadavg()
    with ExitStack() as stack:
        broker, redis_source = stack.enter_context(bench_redis())
        url, server = stack.enter_context(bench_database())
        home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="council-bench-profile-")))
        base_url, _ = stack.enter_context(chat_model(latency_s=latency))
        profiles = local_profiles(home / "profiles.toml", base_url, *AGENTS)
        env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
        env.update(
            COUNCIL_DATABASE_URL=url,
            COUNCIL_BROKER_URL=broker,
            COUNCIL_HOME=str(home),
            COUNCIL_PROFILES=str(profiles),
            COUNCIL_SIMULATE="0",
            COUNCIL_OFFLINE="1",
            NO_COLOR="1",
        )
        stack.enter_context(_environ({k: v for k, v in env.items() if k.startswith("COUNCIL_")}))
        engine = engine_for(url)
        shape = (engine, env, home, broker, councils, concurrency)
        if ab:
            # Variant A (this environment) and B (with ``ab``) alternately, AB BA AB…, on the
            # same database, broker and model; without py-spy.
            measured: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
            for i in range(pairs):
                for name in ("A", "B") if i % 2 == 0 else ("B", "A"):
                    variant = (engine, {**env, **ab}, *shape[2:]) if name == "B" else shape
                    measured[name].append(_measure(*variant, sample=False, rate=rate))
            figures: dict[str, Any] = {"ab": ab, "pairs": pairs, "variants": _ab(measured)}
        else:
            figures = _measure(*shape, sample=sample, rate=rate)
    worker_ms = figures.get("runs_worker_cpu_ms_per_run", 0.0)
    db_ms = figures.get("postgres_cpu_ms_per_run", 0.0)
    return {
        "benchmark": "worker-profile",
        "councils": councils,
        "agents": len(AGENTS),
        "rounds": ROUNDS,
        "concurrency": concurrency,
        "latency_s": latency,
        **figures,
        "target": {
            "runs_worker_cpu_ms_per_run": TARGET_WORKER_MS,
            "postgres_cpu_ms_per_run": TARGET_POSTGRES_MS,
        },
        "load": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "server": server,
        "redis": redis_source,
        **({"skipped": skipped} if skipped else {}),
        "ok": not ab
        and figures.get("failed_runs") == 0
        and worker_ms <= TARGET_WORKER_MS
        and db_ms <= TARGET_POSTGRES_MS,
    }


AB_KEYS = (
    "runs_worker_cpu_ms_per_run",
    "runs_worker_system_ms_per_run",
    "commit_worker_cpu_ms_per_run",
    "postgres_cpu_ms_per_run",
    "runs_per_s",
)


def _ab(measured: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Each variant's figures batch by batch, their medians, and B − A pair by pair."""
    import statistics

    out: dict[str, Any] = {}
    for name, batches in measured.items():
        out[name] = {key: [b[key] for b in batches] for key in (*AB_KEYS, "failed_runs")}
        out[name]["median"] = {key: statistics.median(b[key] for b in batches) for key in AB_KEYS}
    out["b_minus_a"] = {
        key: [round(b[key] - a[key], 2) for a, b in zip(measured["A"], measured["B"], strict=True)]
        for key in AB_KEYS
    }
    return out
