"""Council against a peer, side by side in one run (issue 36): the same council — 3 agents
× 2 rounds, ``COUNCILS`` times, the same fake OpenAI-compatible model with the same latency,
at most 48 model calls in flight — on Council's workers and on LangGraph with its Postgres
checkpointer (``PostgresSaver``, ``durability="sync"``; ``benchmarks/peer_langgraph.py``).

Council's side is ``worker-profile``'s batch without py-spy (one runs worker of 48 threads,
one commit worker; the councils are dispatched in this process before the clock starts,
and the CPU that took is reported as ``dispatch_cpu_ms_per_run``, in place of the API
server's). LangGraph's side runs in a process of its own, ``48 / 3`` councils at once.
Each side's Postgres CPU is the sum of ``utime + stime`` of the backends serving its
database (``pg_stat_activity``'s pids → ``/proc``, polled every 0.2 s so a backend that
exits keeps its last reading); each side has its own database on the same server.

Reported: ``ratio`` = Council runs/s ÷ LangGraph calls/s (a run is one agent's model call
with everything Council governs around it; a LangGraph call is one agent node), target ≥ 1;
``cpu_ratio`` = Council's CPU a run (runs worker + commit worker + dispatch + Postgres) ÷
LangGraph's CPU a call (its process + Postgres), target ≤ 1. Needs the ``peer`` extra
(``pip install -e '.[peer]'``): without it the result says so and is not ok. A smoke run
(``COUNCIL_BENCH_SMOKE``) sends 2 councils, 6 calls in flight, and without the extra runs
Council's side alone (``skipped`` names LangGraph's, with the reason).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psutil
from sqlalchemy import text

from benchmarks import worker_profile
from benchmarks.dispatch import _environ, bench_redis
from benchmarks.harness import bench_database, sized, smoke
from tests.engines import engine_for
from tests.fakes.chat_model import chat_model, local_profiles

COUNCILS = 80
IN_FLIGHT = 48
TARGET_RATIO = 1.0
TARGET_CPU_RATIO = 1.0


class BackendCpu:
    """CPU seconds of the backends serving one database, polled: each backend seen keeps its
    last reading after it exits."""

    def __init__(self, url: str, every_s: float = 0.2) -> None:
        self._engine = engine_for(url)
        self._seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._poll, args=(every_s,), daemon=True)
        self._own: int | None = None

    def __enter__(self) -> BackendCpu:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._engine.dispose()

    def _poll(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            self.sample()

    def sample(self) -> None:
        with self._engine.connect() as conn:
            own = int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())
            pids = conn.execute(
                text("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> :own"),
                {"own": own},
            ).scalars()
            found = {}
            for pid in pids:
                try:
                    times = psutil.Process(int(pid)).cpu_times()
                except (psutil.Error, OSError):
                    continue
                found[int(pid)] = float(times.user + times.system)
        with self._lock:
            self._seen.update(found)

    def read(self) -> float:
        self.sample()
        with self._lock:
            return sum(self._seen.values())


def _langgraph(base_url: str, url: str, councils: int, home: Path, in_flight: int) -> dict[str, Any]:
    argv = [sys.executable, "-m", "benchmarks.peer_langgraph", base_url, url, str(councils), str(in_flight)]
    with (home / "langgraph.log").open("wb") as log, BackendCpu(url) as postgres:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
        assert proc.stdin is not None and proc.stdout is not None
        ready = json.loads(proc.stdout.readline() or "{}")
        if not ready.get("ready"):
            proc.kill()
            raise RuntimeError(f"LangGraph's side did not start: see {home / 'langgraph.log'}")
        db0 = postgres.read()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        done = json.loads(proc.stdout.readline())
        db_s = postgres.read() - db0
        proc.wait(60)
    calls = int(done["calls"])
    return {
        "calls": calls,
        "elapsed_s": round(done["elapsed_s"], 2),
        "calls_per_s": round(calls / done["elapsed_s"], 2),
        "process_cpu_ms_per_call": round(1000 * done["process_cpu_s"] / calls, 2),
        "postgres_cpu_ms_per_call": round(1000 * db_s / calls, 2),
        "cpu_ms_per_call": round(1000 * (done["process_cpu_s"] + db_s) / calls, 2),
    }


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


def run() -> dict[str, Any]:
    missing = [m for m in ("langgraph", "langgraph.checkpoint.postgres") if not _installed(m)]
    absent = f"not installed: {', '.join(missing)} — pip install -e '.[peer]'"
    if missing and not smoke():
        return {"benchmark": "peer", "ok": False, "error": absent}
    councils = int(os.environ.get("COUNCIL_BENCH_PEER_COUNCILS", sized(COUNCILS, 2)))
    in_flight = sized(IN_FLIGHT, 6)
    latency = float(os.environ.get("COUNCIL_BENCH_LATENCY_S", sized(worker_profile.LATENCY_S, 0.05)))
    load = os.getloadavg()
    with ExitStack() as stack:
        broker, redis_source = stack.enter_context(bench_redis())
        url, server = stack.enter_context(bench_database())
        peer_url, _ = stack.enter_context(bench_database())
        home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="council-bench-peer-")))
        base_url, _ = stack.enter_context(chat_model(latency_s=latency))
        profiles = local_profiles(home / "profiles.toml", base_url, *worker_profile.AGENTS)
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
        with BackendCpu(url) as postgres:
            council = worker_profile._measure(
                engine, env, home, broker, councils, in_flight, sample=False, rate=0, postgres=postgres.read
            )
        peer = None if missing else _langgraph(base_url, peer_url, councils, home, in_flight)
    council_ms = (
        council["runs_worker_cpu_ms_per_run"]
        + council["commit_worker_cpu_ms_per_run"]
        + council["dispatch_cpu_ms_per_run"]
        + council["postgres_cpu_ms_per_run"]
    )
    if peer is None:  # a smoke run without the peer extra: Council's side alone
        return {
            "benchmark": "peer",
            "councils": councils,
            "in_flight": in_flight,
            "council": {**council, "cpu_ms_per_run": round(council_ms, 2)},
            "skipped": {"langgraph": absent},
            "ok": False,
        }
    ratio = council["runs_per_s"] / peer["calls_per_s"]
    cpu_ratio = council_ms / peer["cpu_ms_per_call"]
    return {
        "benchmark": "peer",
        "councils": councils,
        "agents": len(worker_profile.AGENTS),
        "rounds": worker_profile.ROUNDS,
        "in_flight": in_flight,
        "latency_s": latency,
        "council": {**council, "cpu_ms_per_run": round(council_ms, 2)},
        "langgraph": peer,
        "ratio": round(ratio, 3),
        "cpu_ratio": round(cpu_ratio, 3),
        "target": {"ratio": TARGET_RATIO, "cpu_ratio": TARGET_CPU_RATIO},
        "load": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "server": server,
        "redis": redis_source,
        "ok": ratio >= TARGET_RATIO and cpu_ratio <= TARGET_CPU_RATIO and council["failed_runs"] == 0,
    }
