"""Requests are coalesced in Redis: one waiting evaluation per version, one waiting
re-verification per memory item."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import pytest
import redis

from council.adapters.celery import CeleryScheduler
from council.adapters.celery_app import connect
from council.adapters.coalesce import EVALUATION, REVERIFICATION, RUN, Marks, marks_for


def _unplanned(version_ids: Sequence[UUID]) -> list[list[UUID]]:
    raise AssertionError("this test enqueues no evaluation")


def test_a_version_already_waiting_is_not_enqueued_again(redis_url: str) -> None:
    # Given a version whose evaluation was enqueued
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    marks = Marks(client, EVALUATION)
    assert marks.mark(["v1", "v2"]) == ["v1", "v2"]
    # When another run touches it and a new version
    again = marks.mark(["v2", "v3", "v1"])
    # Then only the new version is enqueued, and every mark expires eventually
    assert again == ["v3"]
    assert 0 < int(client.ttl(EVALUATION + "v1")) <= 1800


def test_a_started_evaluation_lets_later_claims_enqueue_a_fresh_one(redis_url: str) -> None:
    # Given a waiting evaluation of v1
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    marks = Marks(client, EVALUATION)
    marks.mark(["v1"])
    # When its task starts (it unmarks before reading the ledger)
    marks.unmark(["v1"])
    # Then a claim landing now enqueues another evaluation
    assert marks.mark(["v1"]) == ["v1"]


def test_without_a_redis_broker_nothing_is_coalesced() -> None:
    marks = marks_for("amqp://guest@127.0.0.1:5672//", EVALUATION)
    assert marks.mark(["v1", "v1"]) == ["v1", "v1"]
    marks.unmark(["v1"])  # and unmarking is harmless


def test_evaluations_and_re_verifications_are_marked_apart(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    Marks(client, EVALUATION).mark(["x"])
    # An id waiting for evaluation does not stop a re-verification of the same id
    assert Marks(client, REVERIFICATION).mark(["x"]) == ["x"]
    assert Marks(client, REVERIFICATION).mark(["x"]) == []


def test_reads_of_the_same_provisional_item_queue_one_re_verification(redis_url: str) -> None:
    from uuid import uuid4

    # Given the workers' app on this Redis, and nothing queued
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    connect(redis_url)
    item = uuid4()
    # When three reads show the same provisional memory item before any worker starts on it
    for _ in range(3):
        CeleryScheduler(_unplanned).enqueue_reverification([item])
    # Then one re-verification task waits on the maintenance queue
    assert client.llen("maintenance") == 1


def test_a_run_waiting_in_its_queue_is_not_enqueued_again_until_its_task_starts(redis_url: str) -> None:
    from uuid import uuid4

    # Given the workers' app on this Redis and a run enqueued once
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    connect(redis_url)
    run = uuid4()
    CeleryScheduler(_unplanned).enqueue_runs([run])
    # When the sweep hands it over again while its message waits
    CeleryScheduler(_unplanned).enqueue_runs([run])
    # Then one message waits; once its task has started (and unmarked it), another may be sent
    assert client.llen("runs") == 1
    marks_for(redis_url, RUN).unmark([str(run)])
    CeleryScheduler(_unplanned).enqueue_runs([run])
    assert client.llen("runs") == 2


def test_marks_are_dropped_when_their_message_cannot_be_sent(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from uuid import uuid4

    from council.bootstrap import bootstrap
    from council.errors import TransientDatabaseError
    from tests.engines import dispose_all

    # Given a database that refuses connections (planning the batches of more than one
    # version's evaluation reads it), and the scheduler a face is wired with, on this Redis
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    monkeypatch.setenv("COUNCIL_BROKER_URL", redis_url)
    monkeypatch.setenv("COUNCIL_DATABASE_URL", "postgresql://postgres@127.0.0.1:1/refused")
    versions = [uuid4(), uuid4()]
    try:
        scheduler = bootstrap().required_scheduler()
        # When the evaluations of two versions are enqueued
        with pytest.raises(TransientDatabaseError):
            scheduler.enqueue_evaluations(versions)
    finally:
        dispose_all()
    # Then nothing was sent and no mark is left to keep the sweep away
    assert client.llen("commit") == 0
    assert [client.exists(EVALUATION + str(v)) for v in versions] == [0, 0]


def test_a_worker_clears_the_marks_of_a_task_as_it_starts(redis_url: str) -> None:
    import subprocess
    import sys

    # Given an evaluation waiting (its version marked)
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    Marks(client, EVALUATION).mark(["v1"])
    # When, in a fresh process, the workers' app loads what a worker loads and the task starts
    started = f"""
from celery import signals
from council.workers.app import app, connect
connect({redis_url!r})
app.loader.import_default_modules()
task = app.tasks["council.evaluate_nodes"]
signals.task_prerun.send(sender=task, task_id="t", task=task, args=[["v1"]], kwargs={{}})
"""
    done = subprocess.run([sys.executable, "-c", started], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # Then the mark is gone: a claim landing now enqueues a fresh evaluation
    assert client.exists(EVALUATION + "v1") == 0
