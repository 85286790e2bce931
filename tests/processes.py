"""Stopping the worker processes tests and benchmarks start, each in its own session;
how the tests start racing contenders."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

# The tests' racing contenders (``benchmarks.harness.race``) fork from one server
# process that has imported the ledger once, instead of spawning an interpreter
# each that imports it again: 64 evaluators cost 64 start-ups of about a second of
# CPU each. Each contender is still a process of its own that opens its own engine
# and connection after the fork; the benchmarks keep spawn.
RACE_START_METHOD = "forkserver"
RACE_PRELOAD = [
    "sqlalchemy",
    "psycopg",
    "council.ledger.committer",
    "council.ledger.db",
    "council.services.consolidation",
    "council.services.nodes",
    "council.services.dispatch",
    "tests.price_map",
    "benchmarks.contention",
    "benchmarks.harness",
]
multiprocessing.get_context(RACE_START_METHOD).set_forkserver_preload(RACE_PRELOAD)


def die_with_parent() -> None:
    """``preexec_fn`` of a worker a test starts: killed when the test process dies, so a
    pytest run that is killed leaves no worker consuming the next run's queue (they share
    the test Redis database)."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def stop_groups(procs: Sequence[subprocess.Popen[bytes]], grace_s: float) -> None:
    """SIGTERM every process group (a worker and its pool), wait up to ``grace_s``
    for each, then SIGKILL what is left."""
    for proc in procs:
        _signal_group(proc, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait(10)


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def worker_environment(db_url: str, redis_url: str, home: Path, **settings: str) -> dict[str, str]:
    """The environment of a worker process a test starts: this process's, without any
    ``COUNCIL_`` setting of its own, on the test's database, broker and home, simulated and
    offline; ``settings`` add or override (``COUNCIL_RUN_LEASE_S="6"``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env.update(
        COUNCIL_DATABASE_URL=db_url,
        COUNCIL_BROKER_URL=redis_url,
        COUNCIL_HOME=str(home),
        COUNCIL_SIMULATE="1",
        COUNCIL_OFFLINE="1",
        **settings,
    )
    return env
