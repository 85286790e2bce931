"""A lost or refused database connection is a transient error, and the pool recovers
from a Postgres restart: real servers, real terminations, no mocks."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, text

from council.errors import TransientDatabaseError
from council.ledger import db
from council.ledger.db import engine_for, unit_of_work
from tests.own_postgres import OwnPostgres, own_postgres


def _backend_pid(engine: Engine) -> int:
    with unit_of_work(engine) as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


@pytest.fixture(scope="module")
def server() -> Iterator[OwnPostgres]:
    with own_postgres() as pg:
        yield pg


def test_a_connection_killed_mid_transaction_is_transient_and_discarded(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a pool that never pings (so only the error itself can discard a dead connection)
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)
    first = _backend_pid(engine)
    # When the server terminates the connection in the middle of a transaction
    with pytest.raises(TransientDatabaseError), unit_of_work(engine) as conn:
        conn.execute(text("SELECT pg_terminate_backend(pg_backend_pid())"))
        conn.execute(text("SELECT 1"))
    # Then the error was transient, and the next transaction gets a live connection at once
    assert _backend_pid(engine) != first


@pytest.mark.parametrize("kill", [False, True], ids=["fast-shutdown", "sigkill"])
def test_while_postgres_is_down_the_error_is_transient_and_the_pool_recovers_after_a_restart(
    server: OwnPostgres, kill: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a database on a server of this test's own, and a pool holding several connections
    url = server.create_migrated(f"outage_{'kill' if kill else 'fast'}")
    engine = engine_for(url)
    try:
        with engine.connect() as a, engine.connect() as b, engine.connect() as c:
            before = {conn.execute(text("SELECT pg_backend_pid()")).scalar_one() for conn in (a, b, c)}
        # When Postgres goes away
        server.stop(kill=kill)
        # Then a transaction fails with a transient error (connection refused), never another kind
        for _ in range(2):
            with pytest.raises(TransientDatabaseError), unit_of_work(engine) as conn:
                conn.execute(text("SELECT 1"))
        # When it is back, on the same socket
        server.start()
        # Then the next transactions succeed on new connections, without a restart of this process
        assert _backend_pid(engine) not in before
        # And with pings off, a pooled connection that died unseen fails once, transiently,
        # and takes every other dead one of the pool with it. (The pool is filled with live
        # connections first, every checkout pinged: the pool hands out the connection checked
        # in last, so ones of the first server that no transaction touched may still wait in it.)
        monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 0.0)
        with engine.connect() as a, engine.connect() as b, engine.connect() as c:
            pooled = {conn.execute(text("SELECT pg_backend_pid()")).scalar_one() for conn in (a, b, c)}
        monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)
        server.stop(kill=kill)
        server.start()
        with pytest.raises(TransientDatabaseError), unit_of_work(engine) as conn:
            conn.execute(text("SELECT 1"))
        after = {_backend_pid(engine) for _ in range(3)}
        assert not after & pooled
    finally:
        engine.dispose()
