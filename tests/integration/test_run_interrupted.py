"""A run whose database connection is lost after its claim is retried by its own task at
once, not left for the sweep when its lease expires (docs/architecture.md §7, Delivery).

Real Postgres terminates the worker's pooled connections while the model answers, so the
attempt cannot write its answer nor release the run; the task's retry (Celery's, applied
eagerly here) carries the attempt it held and takes the run over."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, text

from council.adapters.scheduler import Recorder
from council.agents import gateway
from council.ledger import db
from council.ledger.unit import UnitOfWork
from council.services.dispatch import dispatch
from council.services.runs import show_run
from tests.builders import Ledger
from tests.connections import end_every_other_connection


@pytest.fixture
def task_env(monkeypatch: pytest.MonkeyPatch, db_url: str, redis_url: str) -> Iterator[None]:
    """The workers' app and the scheduler on this Redis, this test's database; simulated agents; a pool
    that never pings an idle connection, so the attempt meets the one Postgres ended."""
    from council.workers import tasks
    from council.workers.app import connect

    monkeypatch.setenv("COUNCIL_DATABASE_URL", db_url)
    monkeypatch.setenv("COUNCIL_BROKER_URL", redis_url)
    monkeypatch.setenv("COUNCIL_SIMULATE", "1")
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)
    connect(redis_url)
    tasks._council.cache_clear()
    yield
    tasks._council.cache_clear()


def _lose_the_database_during_the_first_call(monkeypatch: pytest.MonkeyPatch, db_url: str) -> list[int]:
    real = gateway.complete
    ended: list[int] = []

    def complete(*args: Any, **kwargs: Any) -> Any:
        answer = real(*args, **kwargs)
        if not ended:
            ended.append(end_every_other_connection(db_url))
        return answer

    monkeypatch.setattr(gateway, "complete", complete)
    return ended


def test_a_run_cut_off_from_the_database_after_its_claim_is_taken_over_by_its_retry_at_once(
    engine: Engine, uow: UnitOfWork, task_env: None, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from council.workers.tasks import execute_run

    # Given a dispatched run, and Postgres ending every connection of the pool while its model answers
    ledger = Ledger.new(engine)
    ledger.node("SQLite parity holds for query semantics", cites=[ledger.evidence[0]])
    created = dispatch(
        uow, Recorder(), ledger.thread_id, ["claude"], mode="independent", rounds=1, actor="test"
    )
    (run_id,) = created.run_ids
    ended = _lose_the_database_during_the_first_call(monkeypatch, db_url)
    # When the task runs it: the first try cannot write its answer; Celery retries it
    result = execute_run.apply(args=[str(run_id)])
    # Then the connections were really ended, and the retry finished the run (a lease of
    # 300 s would otherwise have left it running for the sweep)
    assert ended and ended[0] >= 1
    assert result.get()["status"] == "succeeded"
    shown = show_run(uow, run_id)
    assert shown.status == "succeeded"
    # And the record says the first attempt was cut off and taken over by its retry
    attempts = [(a.attempt, a.status) for a in shown.attempts]
    assert attempts == [(1, "released"), (2, "succeeded")]
    assert "cut off by a transient error" in (shown.attempts[0].reason or "")
    # And the answer was written, once
    with engine.connect() as conn:
        claims = conn.execute(
            text("SELECT node_version_id FROM claims WHERE run_id = :r"), {"r": run_id}
        ).scalars()
        written = list(claims)
    assert written and len(written) == len(set(written))


def test_a_plain_redelivery_does_not_take_over_a_live_attempt(
    engine: Engine, uow: UnitOfWork, task_env: None
) -> None:
    from council.workers.tasks import execute_run

    # Given a run claimed by a live attempt of another worker
    ledger = Ledger.new(engine)
    ledger.node("WAL mode is safe for concurrent readers", cites=[ledger.evidence[0]])
    created = dispatch(
        uow, Recorder(), ledger.thread_id, ["claude"], mode="independent", rounds=1, actor="test"
    )
    (run_id,) = created.run_ids
    with uow() as tx:
        held = tx.runs.begin(run_id, owner="other-worker", lease_s=300).run
    assert held is not None and held.attempt == 1
    # When a duplicate of its message arrives, and a stale retry naming an attempt it never held
    first = execute_run.apply(args=[str(run_id)]).get()
    stale = execute_run.apply(args=[str(run_id)], kwargs={"held_attempt": 7}).get()
    # Then both are skipped and the live attempt still owns the run
    assert (first["status"], stale["status"]) == ("skipped", "skipped")
    with uow() as tx:
        assert tx.runs.fence(run_id, 1) is not None
    assert [(a.attempt, a.worker, a.status) for a in show_run(uow, run_id).attempts] == [
        (1, "other-worker", None)
    ]
