"""A real prefork worker serves the metrics of all its pool processes on
``COUNCIL_METRICS_PORT`` (prometheus_client multiprocess mode)."""

from __future__ import annotations

import json
import urllib.request

from sqlalchemy import Engine

from tests.builders import Ledger
from tests.conftest import free_port
from tests.e2e.conftest import Workers, council, wait_for
from tests.scrape import sample


def _scrape(port: int) -> bytes | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            body: bytes = response.read()
            return body
    except OSError:
        return None


def _consolidations_timed(port: int) -> float:
    body = _scrape(port) or b""
    return sum(
        sample(body, "council_commit_duration_seconds_count", outcome=outcome)
        for outcome in ("committed", "already_consolidated", "not_ready")
    )


def test_one_scrape_of_a_worker_counts_the_runs_its_pool_processes_executed(
    engine: Engine, workers: Workers, worker_env: dict[str, str]
) -> None:
    # Given a thread with an open proposition and a worker with two pool processes and a metrics port
    ledger = Ledger.new(engine)
    ledger.node("SQLite parity establishes query-semantics equivalence", cites=[ledger.evidence[0]])
    port = free_port()
    workers("--queues", "runs,commit,maintenance", env={"COUNCIL_METRICS_PORT": str(port)})
    wait_for(lambda: _scrape(port) is not None, 60, "the worker's metrics endpoint")
    # When two simulated runs are dispatched and finish
    done = council(
        worker_env,
        "dispatch",
        "--thread",
        str(ledger.thread_id),
        "--agents",
        "claude,codex",
        "--wait",
        "--timeout",
        "180",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert sorted(r["status"] for r in json.loads(done.stdout)["runs"]) == ["succeeded", "succeeded"]
    # Then one scrape of the worker counts both by agent and status, timed, none still in progress
    body = _scrape(port)
    assert body is not None
    for agent in ("claude", "codex"):
        assert sample(body, "council_runs_total", agent=agent, status="succeeded") == 1
        assert sample(body, "council_run_duration_seconds_count", agent=agent) == 1
        assert sample(body, "council_runs_in_progress", agent=agent) == 0
    # And the consolidations the runs queued are timed too, by the commit queue's process
    wait_for(lambda: _consolidations_timed(port) > 0, 60, "a timed consolidation")
