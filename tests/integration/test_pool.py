"""The connection pool (psycopg_pool, council.ledger.db): an idle connection is checked
before use, a busy one is not; a dead one is discarded through the pool's API and the
pool recovers; waiting out the pool is transient."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from council.config import POOL_SIZE_ENV
from council.errors import ConfigError, CouncilError, TransientDatabaseError
from council.ledger import db
from council.ledger.db import Pool, open_pool, unit_of_work


def _backend_pid(pool: Pool) -> int:
    with unit_of_work(pool) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        return int(row[0])


@pytest.fixture
def pool(db_url: str) -> Iterator[Pool]:
    """A pool of one connection of this test's own."""
    own = open_pool(db_url, size=1, timeout=5)
    yield own
    own.close()


def _counting_pings(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    pings: list[object] = []
    real = ConnectionPool.check_connection

    def counted(conn: db.Connection) -> None:
        pings.append(conn)
        real(conn)

    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(counted))
    return pings


def test_a_connection_killed_while_idle_is_replaced(
    pool: Pool, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a pooled connection whose server process was terminated while it sat idle
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 0.0)
    pings = _counting_pings(monkeypatch)
    first = _backend_pid(pool)
    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [first])
    # When the next transaction takes a connection
    second = _backend_pid(pool)
    # Then the dead one was pinged, discarded and replaced by a live one
    assert pings, "the idle connection was not pinged"
    assert second != first


def test_a_connection_used_a_moment_ago_is_not_pinged(pool: Pool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a pool whose connections count as idle only after an hour
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)
    pings = _counting_pings(monkeypatch)
    # When transactions follow one another on the same connection
    pids = {_backend_pid(pool) for _ in range(5)}
    # Then no round trip was spent on pings
    assert len(pids) == 1
    assert pings == []


def test_a_connection_killed_mid_transaction_is_transient_and_discarded(
    pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a pool that never pings (so only the error itself can discard a dead connection)
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)
    first = _backend_pid(pool)
    # When the server terminates the connection in the middle of a transaction
    with pytest.raises(TransientDatabaseError), unit_of_work(pool) as conn:
        conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        conn.execute("SELECT 1")
    # Then the error was transient, and the next transaction gets a live connection
    assert _backend_pid(pool) != first


def test_a_write_refused_by_a_read_only_primary_is_no_lost_connection(
    pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a connection to a primary whose session makes every transaction read-only
    # (SQLSTATE 25006 on a server not in recovery: a bug, not a failover; a hot standby's
    # 25006 is a lost connection, tests/replicated)
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)
    with unit_of_work(pool) as conn:
        conn.execute("SET SESSION default_transaction_read_only = on")
    first = _backend_pid(pool)
    # When a transaction writes on it
    with pytest.raises(CouncilError, match="read-only") as refused, unit_of_work(pool) as conn:
        conn.execute("CREATE TEMP TABLE t (x int)")
    # Then the failure is not transient (no retry would help) and the connection is kept
    assert not isinstance(refused.value, TransientDatabaseError)
    assert _backend_pid(pool) == first


def test_the_connection_given_back_last_goes_out_first(db_url: str) -> None:
    # Given a pool with two connections idle, the first given back before the second
    pool = open_pool(db_url, size=2, timeout=5)
    try:
        with unit_of_work(pool) as first, unit_of_work(pool) as second:
            pids = [conn.info.backend_pid for conn in (first, second)]
        # When transactions follow one another
        used = {_backend_pid(pool) for _ in range(5)}
        # Then each takes the connection given back last: one warm connection does the work
        assert used == {pids[0]}  # the outer block ended last
    finally:
        pool.close()


def test_the_pool_size_comes_from_the_environment_and_a_bad_one_is_a_config_error(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a process whose pool size is set (as `council worker --pool threads` sets it)
    monkeypatch.setattr(db, "_pools", {})
    monkeypatch.setenv(POOL_SIZE_ENV, "12")
    pool = db.pool_for(db_url)
    try:
        # Then its pool opens up to twice that many connections (none up front)
        assert (pool.min_size, pool.max_size) == (0, 24)
    finally:
        pool.close()
    # And a value that is not a number is refused with its name
    monkeypatch.setattr(db, "_pools", {})
    monkeypatch.setenv(POOL_SIZE_ENV, "lots")
    with pytest.raises(ConfigError, match="COUNCIL_DB_POOL_SIZE"):
        db.pool_for(db_url)


def test_no_connection_free_within_the_pools_timeout_is_transient(db_url: str) -> None:
    # Given a pool of one connection, held
    pool = open_pool(db_url, size=1, timeout=0.2)
    try:
        # When another transaction wants one, it waits out the timeout
        # Then the failure is transient: a worker's task retries it
        with (
            unit_of_work(pool),
            pytest.raises(TransientDatabaseError, match="no database connection came free"),
            unit_of_work(pool),
        ):
            pass
    finally:
        pool.close()
