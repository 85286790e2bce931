"""Requests are coalesced in Redis: one waiting evaluation per version, one waiting
re-verification per memory item."""

from __future__ import annotations

import pytest
import redis

from workers.coalesce import EVALUATION, REVERIFICATION, Marks, marks_for


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

    from workers.app import bootstrap
    from workers.tasks import CeleryScheduler

    # Given the workers' app on this Redis, and nothing queued
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    bootstrap(redis_url)
    item = uuid4()
    # When three reads show the same provisional memory item before any worker starts on it
    for _ in range(3):
        CeleryScheduler().enqueue_reverification([item])
    # Then one re-verification task waits on the maintenance queue
    assert client.llen("maintenance") == 1


def test_a_run_waiting_in_its_queue_is_not_enqueued_again_until_its_task_starts(redis_url: str) -> None:
    from uuid import uuid4

    from workers.app import bootstrap
    from workers.coalesce import RUN, marks_for
    from workers.tasks import CeleryScheduler

    # Given the workers' app on this Redis and a run enqueued once
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    bootstrap(redis_url)
    run = uuid4()
    CeleryScheduler().enqueue_runs([run])
    # When the sweep hands it over again while its message waits
    CeleryScheduler().enqueue_runs([run])
    # Then one message waits; once its task has started (and unmarked it), another may be sent
    assert client.llen("runs") == 1
    marks_for(redis_url, RUN).unmark([str(run)])
    CeleryScheduler().enqueue_runs([run])
    assert client.llen("runs") == 2


def test_marks_are_dropped_when_their_message_cannot_be_sent(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from uuid import uuid4

    from council.errors import TransientDatabaseError
    from council.ledger.db import dispose_all
    from workers.app import bootstrap
    from workers.tasks import CeleryScheduler

    # Given a database that refuses connections (planning an evaluation's batches reads it)
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    bootstrap(redis_url)
    monkeypatch.setenv("COUNCIL_DATABASE_URL", "postgresql://postgres@127.0.0.1:1/refused")
    version = uuid4()
    try:
        # When an evaluation is enqueued
        with pytest.raises(TransientDatabaseError):
            CeleryScheduler().enqueue_evaluations([version])
    finally:
        dispose_all()
    # Then nothing was sent and no mark is left to keep the sweep away
    assert client.llen("commit") == 0
    assert client.exists(EVALUATION + str(version)) == 0
