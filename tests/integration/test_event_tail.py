"""The live tail of the event log is exact (docs/architecture.md §8, council.domain.tail).

Event ids are drawn at insert; transactions commit in another order. Each test
makes two writers on two real connections commit out of id order — one holds
its transaction open while the other commits — and checks that the tail, the
hub's poll and the SSE stream deliver every event exactly once, in one stable
order, without NOTIFY.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from uuid import UUID

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from council.bootstrap import bootstrap
from council.domain.tail import TailCursor
from council.ledger.unit import Tx, UnitOfWork
from council.services.threads import settled_threads, tail_events, tail_from
from council.web.app import create_app
from council.web.security import Policy
from tests.builders import ACTOR, Ledger
from tests.sse import Messages, read_messages

BASE_URL = "http://127.0.0.1"


@pytest.fixture
def thread(engine: Engine) -> UUID:
    return Ledger.new(engine).thread_id


def _append(tx: Tx, thread: UUID, n: int) -> int:
    # an event of a known kind (migration 0041 refuses others) whose payload needs no key
    return tx.events.append("rule_set.pinned", actor=ACTOR, thread_id=thread, payload={"n": n})


def _take_xid(tx: Tx) -> None:
    """Give the transaction its id now, before it writes anything."""
    tx.conn.execute("SELECT pg_current_xact_id()")


def _drain(uow: UnitOfWork, thread: UUID, cursor: TailCursor) -> tuple[list[int], TailCursor]:
    page = tail_events(uow, thread, cursor)
    return [e.id for e in page.events], page.cursor


# ------------------------------------------------------------------ the tail


def test_an_event_committed_after_a_later_id_is_neither_skipped_nor_sent_twice(
    uow: UnitOfWork, thread: UUID
) -> None:
    # Given a reader of the thread from the start
    cursor = tail_from(uow, thread, after=0)
    seen, cursor = _drain(uow, thread, cursor)
    # When writer A appends event a and holds its transaction open,
    # and writer B appends b (a later id) and commits
    with uow() as writer_a:
        a = _append(writer_a, thread, 1)
        with uow() as writer_b:
            b = _append(writer_b, thread, 2)
        assert b > a
        # Then b, committed, is not sent while a, an earlier id, is still in flight
        during, cursor = _drain(uow, thread, cursor)
        assert a not in during and b not in during
    # And once A commits, a and b arrive, in (transaction, id) order, each once
    after, cursor = _drain(uow, thread, cursor)
    assert after == [a, b]
    assert _drain(uow, thread, cursor)[0] == []
    assert len(seen + during + after) == len(set(seen + during + after))


def test_resuming_after_an_event_id_follows_the_settled_order_not_the_id_order(
    uow: UnitOfWork, thread: UUID
) -> None:
    # Given a thread's history read, then writer A holding the older transaction while
    # writer B appends b first and commits
    history, cursor = _drain(uow, thread, tail_from(uow, thread, after=0))
    with uow() as writer_a:
        _take_xid(writer_a)
        with uow() as writer_b:
            b = _append(writer_b, thread, 1)
        a = _append(writer_a, thread, 2)
    # When a reader from the start takes everything
    order, _ = _drain(uow, thread, tail_from(uow, thread, after=0))
    # Then the older transaction's event comes first although its id is later
    assert order == [*history, a, b] and a > b
    assert _drain(uow, thread, cursor)[0] == [a, b]
    # And a reader that had seen only a and resumes after it (as Last-Event-ID names it) still gets b
    assert _drain(uow, thread, tail_from(uow, thread, after=a))[0] == [b]
    assert _drain(uow, thread, tail_from(uow, thread, after=b))[0] == []


def test_a_reader_from_now_gets_what_was_in_flight_and_not_what_was_already_visible(
    uow: UnitOfWork, thread: UUID
) -> None:
    # Given A in flight with event a, and B's later event b committed
    with uow() as writer_a:
        a = _append(writer_a, thread, 1)
        with uow() as writer_b:
            b = _append(writer_b, thread, 2)
        # When a reader starts from now
        cursor = tail_from(uow, thread)
    # Then, once A commits, it is sent a (not visible when it came) and not b (already visible)
    got, cursor = _drain(uow, thread, cursor)
    assert got == [a] and b not in got
    # And what comes next arrives as usual
    with uow() as writer:
        c = _append(writer, thread, 3)
    assert _drain(uow, thread, cursor)[0] == [c]


def test_the_hub_poll_reports_a_thread_once_its_events_settle(
    uow: UnitOfWork, engine: Engine, thread: UUID
) -> None:
    other = Ledger.new(engine, title="another thread").thread_id
    horizon = settled_threads(uow, None).horizon
    with uow() as writer_a:
        _append(writer_a, thread, 1)
        with uow() as writer_b:
            _append(writer_b, other, 2)
        # While A is in flight neither thread is reported (B's transaction is younger than A's)
        held = settled_threads(uow, horizon)
        assert held.thread_ids.isdisjoint({thread, other})
        horizon = held.horizon
    # When A commits, the next poll reports both threads, and the one after neither
    settled = settled_threads(uow, horizon)
    assert {thread, other} <= settled.thread_ids
    assert settled_threads(uow, settled.horizon).thread_ids.isdisjoint({thread, other})


# ---------------------------------------------------------------- the stream


@pytest.fixture
def quiet_client(db_url: str) -> Iterator[TestClient]:
    """A server whose streams re-read only when the hub wakes them (keep-alives 30 s apart)."""
    app = create_app(bootstrap(db_url), policy=Policy(), keepalive_s=30.0, poll_s=0.25)
    with TestClient(app, base_url=BASE_URL) as client:
        yield client


def _data(messages: Messages) -> list[int]:
    return [m["id"] for m in messages if m.get("data")]


def test_an_event_reaches_a_stream_within_a_second_without_notify(
    quiet_client: TestClient, uow: UnitOfWork, thread: UUID
) -> None:
    with quiet_client.stream("GET", f"/threads/{thread}/stream") as response:
        lines = response.iter_lines()
        read_messages(lines, lambda ms: {"comment": "listening"} in ms)
        # When an event is committed
        with uow() as writer:
            event = _append(writer, thread, 1)
        committed = time.monotonic()
        # Then the hub's poll wakes the stream and the event arrives within about a second
        got = read_messages(lines, lambda ms: bool(_data(ms)), timeout=5)
        elapsed = time.monotonic() - committed
    assert _data(got) == [event]
    assert elapsed < 1.0, f"the event took {elapsed:.2f} s"


def test_the_stream_sends_out_of_order_commits_once_each_and_a_reconnect_loses_nothing(
    quiet_client: TestClient, uow: UnitOfWork, thread: UUID
) -> None:
    path = f"/threads/{thread}/stream"
    with quiet_client.stream("GET", path) as response:
        lines = response.iter_lines()
        read_messages(lines, lambda ms: {"comment": "listening"} in ms)
        # Given A holding the older transaction while B's event b is committed first
        with uow() as writer_a:
            _take_xid(writer_a)
            with uow() as writer_b:
                b = _append(writer_b, thread, 1)
            time.sleep(1.0)  # four polls of the hub while A is in flight
            a = _append(writer_a, thread, 2)
        # When A commits its event a (a later id), and then C commits c
        with uow() as writer_c:
            c = _append(writer_c, thread, 3)
        # Then the stream sends a, b, c: each once, in the settled order, none skipped
        got = read_messages(lines, lambda ms: len(_data(ms)) >= 3, timeout=10)
    assert _data(got) == [a, b, c] and a > b
    # And a client that lost its connection after a resumes with Last-Event-ID and gets b and c
    with quiet_client.stream("GET", path, headers={"Last-Event-ID": str(a)}) as response:
        resumed = read_messages(response.iter_lines(), lambda ms: len(_data(ms)) >= 2)
    assert _data(resumed) == [b, c]
