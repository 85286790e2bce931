"""The connection pool: an idle connection is checked before use, a busy one is not; the
connection checked in last goes out first; waiting out the pool is transient."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text

from council import config
from council.config import POOL_SIZE_ENV
from council.errors import ConfigError, TransientDatabaseError
from council.ledger import db
from council.ledger.db import unit_of_work


def _backend_pid(engine: Engine) -> int:
    with unit_of_work(engine) as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def _counting_pings(monkeypatch: pytest.MonkeyPatch, engine: Engine) -> list[Any]:
    pings: list[Any] = []
    real = engine.dialect.do_ping

    def counted(dbapi_connection: Any) -> bool:
        pings.append(dbapi_connection)
        return bool(real(dbapi_connection))

    monkeypatch.setattr(engine.dialect, "do_ping", counted)
    return pings


def test_a_connection_killed_while_idle_is_replaced(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a pooled connection whose server process was terminated while it sat idle
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 0.0)
    pings = _counting_pings(monkeypatch, engine)
    with engine.connect() as admin:  # held, so the pool hands out another connection
        first = _backend_pid(engine)
        admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first})
        admin.commit()
        # When the next transaction checks a connection out
        second = _backend_pid(engine)
    # Then the dead one was pinged, discarded and replaced by a live one
    assert pings, "the idle connection was not pinged"
    assert second != first


def test_a_connection_used_a_moment_ago_is_not_pinged(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a pool whose connections count as idle only after an hour
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)
    pings = _counting_pings(monkeypatch, engine)
    # When transactions follow one another on the same connection
    pids = {_backend_pid(engine) for _ in range(5)}
    # Then no round trip was spent on pings
    assert len(pids) == 1
    assert pings == []


def test_the_pool_size_comes_from_the_environment_and_a_bad_one_is_a_config_error(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a process whose pool size is set (as `council worker --pool threads` sets it)
    monkeypatch.setattr(db, "_engines", {})
    monkeypatch.setenv(POOL_SIZE_ENV, "12")
    engine = db.engine_for(db_url)
    try:
        # Then its engine keeps that many connections, as many again on overflow
        assert (engine.pool.size(), engine.pool._max_overflow) == (12, 12)  # type: ignore[attr-defined]
    finally:
        engine.dispose()
    # And a value that is not a number is refused with its name
    monkeypatch.setattr(db, "_engines", {})
    monkeypatch.setenv(POOL_SIZE_ENV, "lots")
    with pytest.raises(ConfigError, match="COUNCIL_DB_POOL_SIZE"):
        db.engine_for(db_url)


def test_the_connection_checked_in_last_goes_out_first(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a process's engine with two connections open, the first checked in before the second
    monkeypatch.setattr(db, "_engines", {})
    engine = db.engine_for(db_url, pool_size=2)
    try:
        with engine.connect() as first, engine.connect() as second:
            pids = [c.execute(text("SELECT pg_backend_pid()")).scalar_one() for c in (first, second)]
            first.close()  # checked in first
        # When transactions follow one another
        used = {_backend_pid(engine) for _ in range(5)}
        # Then each takes the connection checked in last: one warm connection does the work
        assert used == {pids[1]}
    finally:
        engine.dispose()


def test_no_connection_free_within_the_pools_timeout_is_transient(db_url: str) -> None:
    # Given a pool of one connection, held
    engine = create_engine(config.sqlalchemy_url(db_url), pool_size=1, max_overflow=0, pool_timeout=0.2)
    try:
        # When another transaction wants one, it waits out the timeout
        # Then the failure is transient: a worker's task retries it
        with (
            engine.connect(),
            pytest.raises(TransientDatabaseError, match="no database connection came free"),
            unit_of_work(engine),
        ):
            pass
    finally:
        engine.dispose()
