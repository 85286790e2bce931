"""The commit queue's task: a message's versions decided in one committer
transaction, and, should that fail, one by one so the others are still decided."""

from __future__ import annotations

from collections.abc import Iterator
from uuid import UUID

import pytest
from sqlalchemy import Engine, text

from council.errors import NotFound
from tests.builders import Ledger


@pytest.fixture
def task_env(monkeypatch: pytest.MonkeyPatch, db_url: str, redis_url: str) -> Iterator[None]:
    """The workers' app on this Redis, and this test's database as the configured one
    (the tasks wire their dependencies once per process: again for each test)."""
    from council.workers import tasks
    from council.workers.app import connect

    monkeypatch.setenv("COUNCIL_DATABASE_URL", db_url)
    connect(redis_url)
    tasks._council.cache_clear()
    yield
    tasks._council.cache_clear()


def _live(engine: Engine) -> set[UUID]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT node_version_id FROM consolidations WHERE status = 'live'"))
        return {row[0] for row in rows}


def test_a_message_is_decided_in_one_batch(engine: Engine, task_env: None) -> None:
    from council.workers.tasks import evaluate_nodes

    # Given two ready nodes and one with no support
    ledger = Ledger.new(engine)
    ready = [ledger.ready_node(f"ready {i}") for i in range(2)]
    lonely = UUID(str(ledger.node("lonely")["version_id"]))
    # When one commit-queue message carries all three
    answer = evaluate_nodes([str(ready[0]), str(lonely), str(ready[1])])
    # Then each got its own outcome
    assert answer == {
        "outcomes": {str(ready[0]): "committed", str(lonely): "not_ready", str(ready[1]): "committed"}
    }
    assert _live(engine) == set(ready)


def test_one_bad_version_does_not_keep_the_others_from_being_decided(engine: Engine, task_env: None) -> None:
    from council.workers.tasks import evaluate_nodes

    # Given a message with an id the ledger does not know between two ready nodes
    ledger = Ledger.new(engine)
    ready = [ledger.ready_node(f"ready {i}") for i in range(2)]
    unknown = "00000000-0000-4000-8000-000000000000"
    # When it is evaluated: the batch fails, so each version is decided on its own
    with pytest.raises(NotFound, match=unknown):
        evaluate_nodes([str(ready[0]), unknown, str(ready[1])])
    # Then the task still failed visibly, but both ready nodes were consolidated
    assert _live(engine) == set(ready)
