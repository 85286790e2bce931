"""``python -m benchmarks worker-profile --json`` in a tiny shape (2 councils of 3 agents ×
2 rounds, 4 threads, 50 ms of model latency): one JSON document whose runs all succeeded,
whose runs worker's CPU is split by thread role and by library, and whose parts add up to
the worker's total CPU a run (read from /proc, not from the samples)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from benchmarks import sampling

TOLERANCE_MS = 0.05  # the parts are rounded to 1 µs each


@pytest.mark.slow  # about 26 s: a database, two workers, py-spy
@pytest.mark.skipif(sampling.py_spy() is None, reason="py-spy is not installed (pip install -e '.[profile]')")
def test_the_worker_profile_splits_the_runs_cpu_into_parts_that_add_up(
    redis_url: str, pg_server_url: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_BENCH_")}
    env.update(
        COUNCIL_BENCH_REDIS_URL=redis_url,
        COUNCIL_BENCH_DATABASE_URL=pg_server_url,
        COUNCIL_BENCH_PROFILE_COUNCILS="2",
        COUNCIL_BENCH_PROFILE_CONCURRENCY="4",
        COUNCIL_BENCH_LATENCY_S="0.05",
        COUNCIL_BENCH_PROFILE_RATE="200",
    )
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "worker-profile", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["benchmark"] == "worker-profile"
    assert (result["runs"], result["failed_runs"]) == (2 * 3 * 2, 0)
    total = result["runs_worker_cpu_ms_per_run"]
    assert total > 0
    profile = result["profile"]
    assert profile["samples"] > 0, "py-spy took no sample of the worker"
    assert abs(profile["total_cpu_ms_per_run"] - total) <= 0.01
    assert abs(sum(profile["by_thread_ms_per_run"].values()) - total) <= TOLERANCE_MS
    assert abs(sum(profile["by_library_ms_per_run"].values()) - total) <= TOLERANCE_MS
    assert any(role.startswith("run threads") for role in profile["by_thread_ms_per_run"])
    for key in ("commit_worker_cpu_ms_per_run", "postgres_cpu_ms_per_run", "load", "runs_per_s"):
        assert key in result
