"""How the committer waits for a node lock another transaction holds
(docs/architecture.md §4): it takes free locks, waits for a held one with a
shared lock beside the other waiters and answers a repeat of what the holder
decided, and waits for the exclusive lock, in a second transaction, only for
what is still undecided."""

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
from council.services.consolidation import consolidate_many
from tests.builders import ACTOR, Ledger
from tests.engines import pq, uow_of


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
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    version_id: UUID,
    *,
    holder_decides: bool,
    evaluated: list[UUID] | None = None,
) -> tuple[list[Evaluated], list[str], dict[UUID, Evaluated]]:
    """A holder takes the node lock of ``version_id``; then an evaluator consolidates
    ``evaluated`` (that version alone by default) while the holder decides the version
    (or, ``holder_decides`` false, ends deciding nothing). Returns the evaluator's
    answers, the lock waits of its transactions, and the holder's results."""
    real = committer._consolidate_batch
    waits: list[str] = []

    def recorded(conn: Any, version_ids: list[UUID], **kw: Any) -> dict[UUID, Evaluated]:
        waits.append(kw["wait"])
        return real(conn, version_ids, **kw)

    locked, release = threading.Event(), threading.Event()
    held: dict[UUID, Evaluated] = {}

    def holder() -> None:
        with engine.connect() as conn, conn.begin():
            lock_node(pq(conn), _logical_node(engine, version_id))
            locked.set()
            release.wait(10)
            if holder_decides:
                held.update(real(pq(conn), [version_id], actor=ACTOR, dry_run=False))

    answers: list[list[Evaluated]] = []
    holding = threading.Thread(target=holder)
    holding.start()
    assert locked.wait(10)
    monkeypatch.setattr(committer, "_consolidate_batch", recorded)
    batch = evaluated or [version_id]
    evaluating = threading.Thread(
        target=lambda: answers.append(consolidate_many(uow_of(engine), batch, actor=ACTOR))
    )
    evaluating.start()
    _await_blocked_shared_waiter(engine)
    release.set()
    holding.join(10)
    evaluating.join(10)
    assert len(answers) == 1
    return answers[0], waits, held


def _live_ids(engine: Engine, version_id: UUID) -> list[UUID]:
    with engine.connect() as conn:
        sql = "SELECT id FROM consolidations WHERE node_version_id = :v AND status = 'live'"
        return list(conn.execute(text(sql), {"v": version_id}).scalars())


def test_a_repeat_of_what_the_lock_holder_decided_is_answered_under_the_shared_lock(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a ready node whose lock another committer holds while it decides the node
    version_id = Ledger.new(engine).ready_node()
    # When an evaluator consolidates the same version meanwhile
    [answer], waits, held = _race_a_holder(engine, monkeypatch, version_id, holder_decides=True)
    # Then it waited with a shared lock in its one transaction and answered with the
    # holder's consolidation, never taking the exclusive lock
    assert held[version_id].outcome == "committed"
    assert waits == ["try"]
    assert answer.outcome == "already_consolidated"
    assert answer.consolidation_id == held[version_id].consolidation_id
    # And the ledger holds that one live consolidation
    assert _live_ids(engine, version_id) == [answer.consolidation_id]


def test_a_version_the_holder_left_undecided_waits_for_the_exclusive_lock_and_commits(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a ready node whose lock another transaction holds and releases deciding nothing
    version_id = Ledger.new(engine).ready_node()
    # When an evaluator consolidates the version meanwhile
    [answer], waits, held = _race_a_holder(engine, monkeypatch, version_id, holder_decides=False)
    # Then the shared wait answered nothing, and a second transaction, exclusive, committed
    assert held == {}
    assert waits == ["try", "exclusive"]
    assert answer.outcome == "committed"
    assert _live_ids(engine, version_id) == [answer.consolidation_id]


def test_a_batch_decides_its_free_nodes_and_answers_a_held_node_from_its_holder(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two ready nodes, one of them locked by a committer deciding it
    ledger = Ledger.new(engine)
    busy, free = ledger.ready_node("busy"), ledger.ready_node("free")
    # When a batch of both is consolidated meanwhile
    answers, waits, held = _race_a_holder(
        engine, monkeypatch, busy, holder_decides=True, evaluated=[busy, free]
    )
    # Then one transaction committed the free one and answered the held one with the holder's
    assert waits == ["try"]
    assert [(a.node_version_id, a.outcome) for a in answers] == [
        (busy, "already_consolidated"),
        (free, "committed"),
    ]
    assert answers[0].consolidation_id == held[busy].consolidation_id
    assert _live_ids(engine, busy) == [answers[0].consolidation_id]
    assert _live_ids(engine, free) == [answers[1].consolidation_id]
