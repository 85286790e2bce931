"""Delivery under faults (issue 31): no run waits out a mark its worker can no longer
honour, and a dispatch says what became of it when the broker is down.

Real Celery workers, real Redis, real Postgres; the faults are real signals."""

from __future__ import annotations

import signal
import time

import psutil
import redis
from sqlalchemy import Engine

from tests.builders import Ledger
from tests.e2e.conftest import Workers, council, rows, wait_for


def test_a_run_taken_by_a_worker_that_died_before_starting_it_starts_on_a_fresh_worker(
    engine: Engine, workers: Workers, worker_env: dict[str, str], redis_url: str
) -> None:
    # Given a prefork runs worker whose only pool process is stopped: its main process
    # takes a message from the queue, but the task never starts
    ledger = Ledger.new(engine, evidence_items=1)
    ledger.node("WAL mode is safe for concurrent readers", cites=[ledger.evidence[0]])
    doomed = workers("--queues", "runs", "--pool", "prefork", "--concurrency", "1")
    wait_for(lambda: bool(psutil.Process(doomed.pid).children()), 60, "the worker's pool process")
    broker = redis.Redis.from_url(redis_url)
    wait_for(lambda: broker.exists("_kombu.binding.runs") == 1, 60, "the worker to bind its queue")
    for child in psutil.Process(doomed.pid).children(recursive=True):
        child.send_signal(signal.SIGSTOP)
    created = council(
        worker_env, "dispatch", "--thread", str(ledger.thread_id), "--agents", "claude", "--json"
    )
    assert created.returncode == 0, created.stderr
    wait_for(lambda: broker.llen("runs") == 0, 60, "the worker's main process to take the message")
    time.sleep(1)
    # When the worker dies with the message, before the task started
    for child in psutil.Process(doomed.pid).children(recursive=True):
        child.kill()
    doomed.kill()
    doomed.wait(10)
    [queued] = rows(engine, "SELECT status FROM agent_runs")
    assert queued.status == "queued"
    # And a fresh worker with the sweep comes up
    started = time.monotonic()
    workers("--queues", "runs,commit,maintenance", "--beat")
    # Then the run starts and ends long before the broker would hand the message out
    # again (its visibility timeout, 30 min): the run's mark lives no longer than its lease
    wait_for(
        lambda: rows(engine, "SELECT 1 FROM agent_runs WHERE status = 'succeeded'") != [],
        90,
        "the run to succeed on the fresh worker",
    )
    waited = time.monotonic() - started
    [run] = rows(engine, "SELECT attempt, status FROM agent_runs")
    assert run.status == "succeeded" and run.attempt == 1, run
    print(f"the run succeeded {waited:.1f} s after the fresh worker was started")
