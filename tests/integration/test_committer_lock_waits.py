"""How the committer waits for a node lock another transaction holds
(docs/architecture.md §4): it takes free locks without waiting, waits for a
held one with a shared lock beside the other waiters and answers a repeat of
what the holder decided, and waits for the exclusive lock only for what is
still undecided."""

from __future__ import annotations

import threading
import time
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine, text

from council.domain.results.consolidation import Evaluated
from council.ledger import committer
from council.ledger.locks import lock_node
from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate
from tests.builders import ACTOR, Ledger


def _scalar(engine: Engine, sql: str, **params: Any) -> Any:
    with engine.connect() as conn:
        return conn.execute(text(sql), params).scalar_one()


def _logical_node(engine: Engine, version_id: UUID) -> UUID:
    return UUID(str(_scalar(engine, "SELECT logical_node_id FROM node_versions WHERE id = :v", v=version_id)))


def _await_blocked_shared_waiter(engine: Engine) -> None:
    """Until a transaction waits, not yet granted, for a shared advisory lock."""
    deadline = time.monotonic() + 10
    sql = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock' AND NOT granted"
    while not _scalar(engine, sql):
        assert time.monotonic() < deadline, "the committer never waited for the shared node lock"
        time.sleep(0.01)


def _race_a_holder(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, version_id: UUID, *, holder_decides: bool
) -> tuple[Evaluated, list[str], dict[UUID, dict[str, Any]]]:
    """A holder takes the version's node lock; then an evaluator consolidates the version
    while the holder decides it (or, ``holder_decides`` false, ends deciding nothing).
    Returns the evaluator's answer, the lock waits of its transactions, and the holder's results."""
    real = committer._consolidate_batch
    waits: list[str] = []

    def recorded(conn: Any, version_ids: list[UUID], **kw: Any) -> dict[UUID, dict[str, Any]]:
        waits.append(kw["wait"])
        return real(conn, version_ids, **kw)

    locked, release = threading.Event(), threading.Event()
    held: dict[UUID, dict[str, Any]] = {}

    def holder() -> None:
        with engine.connect() as conn, conn.begin():
            lock_node(conn, _logical_node(engine, version_id))
            locked.set()
            release.wait(10)
            if holder_decides:
                held.update(real(conn, [version_id], actor=ACTOR, dry_run=False))

    answers: list[Evaluated] = []
    holding = threading.Thread(target=holder)
    holding.start()
    assert locked.wait(10)
    monkeypatch.setattr(committer, "_consolidate_batch", recorded)
    evaluating = threading.Thread(
        target=lambda: answers.append(consolidate(UnitOfWork(engine), version_id, actor=ACTOR))
    )
    evaluating.start()
    _await_blocked_shared_waiter(engine)
    release.set()
    holding.join(10)
    evaluating.join(10)
    assert len(answers) == 1
    return answers[0], waits, held


def test_a_repeat_of_what_the_lock_holder_decided_is_answered_under_the_shared_lock(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a ready node whose lock another committer holds while it decides the node
    version_id = Ledger.new(engine).ready_node()
    # When an evaluator consolidates the same version meanwhile
    answer, waits, held = _race_a_holder(engine, monkeypatch, version_id, holder_decides=True)
    # Then it found the lock taken, waited with a shared lock, and answered with the
    # holder's consolidation, never taking the exclusive lock
    assert held[version_id]["outcome"] == "committed"
    assert waits == ["try", "shared"]
    assert answer.outcome == "already_consolidated"
    assert answer.consolidation_id == held[version_id]["consolidation_id"]
    # And the ledger holds that one live consolidation
    live = "SELECT count(*) FROM consolidations WHERE node_version_id = :v AND status = 'live'"
    assert _scalar(engine, live, v=version_id) == 1


def test_a_version_the_holder_left_undecided_waits_for_the_exclusive_lock_and_commits(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a ready node whose lock another transaction holds and releases deciding nothing
    version_id = Ledger.new(engine).ready_node()
    # When an evaluator consolidates the version meanwhile
    answer, waits, held = _race_a_holder(engine, monkeypatch, version_id, holder_decides=False)
    # Then the shared pass answered nothing, and the exclusive one decided and committed
    assert held == {}
    assert waits == ["try", "shared", "exclusive"]
    assert answer.outcome == "committed"
    live = "SELECT id FROM consolidations WHERE node_version_id = :v AND status = 'live'"
    assert _scalar(engine, live, v=version_id) == answer.consolidation_id


def test_try_leaves_a_held_node_alone_and_decides_the_free_ones_of_its_batch(engine: Engine) -> None:
    # Given two ready nodes, one of them locked by another transaction
    ledger = Ledger.new(engine)
    busy, free = ledger.ready_node("busy"), ledger.ready_node("free")
    with engine.connect() as other, other.begin():
        lock_node(other, _logical_node(engine, busy))
        # When a batch of both is decided without waiting
        with engine.connect() as conn, conn.begin():
            started = time.monotonic()
            results = committer._consolidate_batch(conn, [busy, free], actor=ACTOR, dry_run=False, wait="try")
            waited = time.monotonic() - started
            # Then the free one committed, the held one was left out, and nothing waited for it
            # (a wait would last the lock timeout, 10 s, and fail)
            assert {v: r["outcome"] for v, r in results.items()} == {free: "committed"}
            assert waited < 2.0
            # And a shared pass on the free one, already live, answers the repeat
            shared = committer._consolidate_batch(conn, [free], actor=ACTOR, dry_run=False, wait="shared")
            assert shared[free]["consolidation_id"] == results[free]["consolidation_id"]
    count = "SELECT count(*) FROM consolidations WHERE node_version_id = :v"
    assert (_scalar(engine, count, v=busy), _scalar(engine, count, v=free)) == (0, 1)
