"""Evaluation requests are coalesced in Redis: one waiting evaluation per version."""

from __future__ import annotations

import redis

from workers.coalesce import MARK_PREFIX, Marks, marks_for


def test_a_version_already_waiting_is_not_enqueued_again(redis_url: str) -> None:
    # Given a version whose evaluation was enqueued
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    marks = Marks(client)
    assert marks.mark(["v1", "v2"]) == ["v1", "v2"]
    # When another run touches it and a new version
    again = marks.mark(["v2", "v3", "v1"])
    # Then only the new version is enqueued, and every mark expires eventually
    assert again == ["v3"]
    assert 0 < int(client.ttl(MARK_PREFIX + "v1")) <= 1800


def test_a_started_evaluation_lets_later_claims_enqueue_a_fresh_one(redis_url: str) -> None:
    # Given a waiting evaluation of v1
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    marks = Marks(client)
    marks.mark(["v1"])
    # When its task starts (it unmarks before reading the ledger)
    marks.unmark(["v1"])
    # Then a claim landing now enqueues another evaluation
    assert marks.mark(["v1"]) == ["v1"]


def test_without_a_redis_broker_nothing_is_coalesced() -> None:
    marks = marks_for("amqp://guest@127.0.0.1:5672//")
    assert marks.mark(["v1", "v1"]) == ["v1", "v1"]
    marks.unmark(["v1"])  # and unmarking is harmless
