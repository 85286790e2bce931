"""Delivery under faults (issue 31): no run waits out a mark its worker can no longer
honour, and a dispatch says what became of it when the broker is down.

Real Celery workers, real Redis, real Postgres; the faults are real signals."""

from __future__ import annotations

import json
import signal
import socket
import time

import psutil
import pytest
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


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_dispatch_with_the_broker_down_is_deferred_then_sent_and_a_retry_creates_nothing(
    engine: Engine, workers: Workers, worker_env: dict[str, str]
) -> None:
    # Given a thread, and a broker nobody answers at
    ledger = Ledger.new(engine, evidence_items=1)
    ledger.node("WAL mode is safe for concurrent readers", cites=[ledger.evidence[0]])
    down = {**worker_env, "COUNCIL_BROKER_URL": f"redis://127.0.0.1:{_closed_port()}/0"}
    ask = (
        "dispatch",
        "--thread",
        str(ledger.thread_id),
        "--agents",
        "claude,codex",
        "--key",
        "k-31",
        "--json",
    )
    # When a keyed dispatch is made
    first = council(down, *ask)
    # Then it stands, says its delivery was deferred and why, in one JSON document, exit 0
    assert first.returncode == 0, first.stderr
    made = json.loads(first.stdout)
    assert made["delivery"] == "deferred" and "broker" in made["deferred_reason"]
    assert "delivery deferred" in first.stderr and "Traceback" not in first.stderr
    # And a retry with the same key, broker still down, returns it and creates nothing
    again = json.loads(council(down, *ask).stdout)
    assert again["dispatch_id"] == made["dispatch_id"] and again["replayed"] is True
    assert again["run_ids"] == made["run_ids"]
    assert len(rows(engine, "SELECT 1 FROM dispatches")) == 1
    assert len(rows(engine, "SELECT 1 FROM agent_runs")) == 2
    # When workers and the sweep come up on the real broker
    workers("--queues", "runs,commit,maintenance", "--beat")
    # Then the sweep sends the deferred runs, and they run once each
    wait_for(
        lambda: len(rows(engine, "SELECT 1 FROM agent_runs WHERE status = 'succeeded'")) == 2,
        90,
        "the deferred runs to succeed",
    )
    assert {r.attempt for r in rows(engine, "SELECT attempt FROM agent_runs")} == {1}
    # And a retry with the key, broker up, still creates nothing and sends nothing new
    last = council(worker_env, *ask)
    assert last.returncode == 0, last.stderr
    assert json.loads(last.stdout)["dispatch_id"] == made["dispatch_id"]
    assert len(rows(engine, "SELECT 1 FROM agent_runs")) == 2
    # And the key asking for other agents is refused with a reason, nothing written
    other = council(worker_env, *ask[:4], "glm", *ask[5:])
    assert other.returncode == 2 and json.loads(other.stdout)["code"] == 2
    assert "another dispatch" in other.stderr
    assert len(rows(engine, "SELECT 1 FROM dispatches")) == 1


@pytest.mark.parametrize(
    "args",
    [
        ("memory", "list"),
        ("reentry", "--thread", "{thread}"),
        ("evidence", "invalidate", "{evidence}", "--reason", "broker down"),
        ("consolidate", "--node", "{version}"),
        ("dispatch", "--thread", "{thread}", "--agents", "glm"),
    ],
)
def test_every_json_command_prints_one_document_with_the_broker_down(
    engine: Engine, worker_env: dict[str, str], args: tuple[str, ...]
) -> None:
    # Given a ledger, and a broker nobody answers at
    ledger = Ledger.new(engine, evidence_items=1)
    version = ledger.node("WAL mode is safe", cites=[ledger.evidence[0]])["version_id"]
    down = {**worker_env, "COUNCIL_BROKER_URL": f"redis://127.0.0.1:{_closed_port()}/0"}
    filled = [a.format(thread=ledger.thread_id, evidence=ledger.evidence[0], version=version) for a in args]
    # When the command runs
    done = council(down, *filled, "--json")
    # Then stdout holds exactly one JSON document, and no traceback reaches stderr
    assert done.returncode in (0, 1), done.stderr
    json.loads(done.stdout)
    assert "Traceback" not in done.stderr
