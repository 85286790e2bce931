"""A lost or refused database connection is a transient error, and the pool recovers
from a Postgres restart: real servers, real terminations, no mocks."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from council.errors import TransientDatabaseError
from council.ledger import db
from council.ledger.db import Pool, open_pool, unit_of_work
from tests.own_postgres import OwnPostgres, own_postgres


def _backend_pid(pool: Pool) -> int:
    with unit_of_work(pool) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        return int(row[0])


def _held_pids(pool: Pool, n: int) -> set[int]:
    """The backends of ``n`` connections of the pool, each held while the next is taken."""
    pids: set[int] = set()
    with unit_of_work(pool) as a, unit_of_work(pool) as b, unit_of_work(pool) as c:
        for conn in (a, b, c)[:n]:
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None
            pids.add(int(row[0]))
    return pids


@pytest.fixture(scope="module")
def server() -> Iterator[OwnPostgres]:
    with own_postgres() as pg:
        yield pg


@pytest.mark.parametrize("kill", [False, True], ids=["fast-shutdown", "sigkill"])
def test_while_postgres_is_down_the_error_is_transient_and_the_pool_recovers_after_a_restart(
    server: OwnPostgres, kill: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a database on a server of this test's own, and a pool holding several connections
    url = server.create_migrated(f"outage_{'kill' if kill else 'fast'}")
    pool = open_pool(url, size=3, timeout=10)
    try:
        before = _held_pids(pool, 3)
        # When Postgres goes away
        server.stop(kill=kill)
        # Then a transaction fails with a transient error (connection refused), never another kind,
        # and soon (not after the pool's timeout)
        monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 0.0)
        for _ in range(2):
            with pytest.raises(TransientDatabaseError), unit_of_work(pool) as conn:
                conn.execute("SELECT 1")
        # When it is back, on the same socket
        server.start()
        # Then the next transactions succeed on new connections, without a restart of this process
        assert _backend_pid(pool) not in before
        # And with pings off, a pooled connection that died unseen fails once, transiently,
        # and takes every other dead one of the pool with it
        pooled = _held_pids(pool, 3)
        monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)
        server.stop(kill=kill)
        server.start()
        with pytest.raises(TransientDatabaseError), unit_of_work(pool) as conn:
            conn.execute("SELECT 1")
        after = {_backend_pid(pool) for _ in range(3)}
        assert not after & pooled
    finally:
        pool.close()
