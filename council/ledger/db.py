"""Connection pools and the transaction primitive; driver errors become the project's errors here.

Nothing builds a pool at import time: the bootstrap calls :func:`pool_for` once per
process and hands the unit of work (``council.ledger.unit``) to the services. A pool is
psycopg's own (``psycopg_pool.ConnectionPool``), of a bounded size; its ``check`` callback
pings a connection that sat idle before it is handed out (the unit of work notes when each
was given back). A connection found dead is discarded through the pool's API (closed,
then given back, which replaces it), and with it every idle one (``drain``): after a
restart or a failover they are all dead.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from council import config
from council.errors import TransientDatabaseError
from council.ledger.pg import APPLICATION_NAME, Connection, lost, translate_driver

# A pooled connection idle at least this long is pinged before it is handed out.
PING_AFTER_IDLE_S = 1.0
# How long a transaction waits for a pooled connection when every one is busy.
POOL_TIMEOUT_S = 30.0
# A transaction waits for a connection in slices this long: after a slice in which the pool
# could not connect (or found a connection dead) it fails transient at once instead of
# waiting out the pool's timeout, and a worker's retry tries again.
CONNECT_WAIT_S = 2.0
# How long the pool's background keeps retrying a failed connect before it gives up and
# leaves the next transaction's demand to try again (at once, not after a long backoff).
RECONNECT_S = 2.0


class Pool(ConnectionPool[Connection]):
    """psycopg's pool, handing out the connection given back last (last in, first out).

    psycopg_pool hands out the one idle longest; a thread then alternates between its
    connections (a lease renewal running beside a run makes two), each with cold caches and
    its own prepared statements: measured, 30-40% more server CPU a run than the warm
    connection SQLAlchemy's LIFO pool reused. ``tests/integration/test_pool.py`` checks the
    order, so an upgrade of psycopg_pool that changes how it keeps its idle connections
    (a deque, taken from the left under its lock) fails there, not in production."""

    def _get_ready_connection(self, timeout: float | None) -> Connection | None:
        if self._pool:
            self._pool.rotate(1)  # the last given back, appended on the right, to the front
        return super()._get_ready_connection(timeout)


_pools: dict[str, Pool] = {}
_pools_lock = threading.Lock()
# Pools a forked child inherited: kept referenced, never closed (their connections are the parent's).
_inherited: list[Pool] = []
_hooks: dict[int, _Hooks] = {}


class _Hooks:
    """The pool's callbacks (they need the pool, made after them)."""

    def __init__(self) -> None:
        self.pool: Pool | None = None
        self.idle_since: weakref.WeakKeyDictionary[Connection, float] = weakref.WeakKeyDictionary()
        self.losses = 0  # connections found lost (by a check or a transaction's error)

    def configure(self, conn: Connection) -> None:
        conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED

    def given_back(self, conn: Connection) -> None:
        """Note when ``conn`` went idle. Not the pool's ``reset`` callback: with one, the pool
        gives every connection back through its worker thread, so the next transaction of
        the same thread finds none ready and the pool opens another; a sequential process
        then spreads over every connection (measured: 40% more server CPU a run)."""
        self.idle_since[conn] = time.monotonic()

    def check(self, conn: Connection) -> None:
        """Pessimistic disconnect handling, but only for a connection that sat idle: a
        server restart or an idle timeout may have closed it. One given back a moment ago
        (the previous transaction of the same task) is used as it is, which saves a round
        trip per transaction. A failed ping discards every idle connection (the pool
        opens new ones) and makes the pool hand out another."""
        idle_since = self.idle_since.get(conn)
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_S:
            return
        try:
            ConnectionPool.check_connection(conn)
        except psycopg.Error:
            self.lost()
            raise

    def lost(self) -> None:
        self.losses += 1
        if self.pool is not None:
            self.pool.drain()


def pool_for(url: str, *, pool_size: int | None = None) -> Pool:
    """One pool per URL per process (opened lazily, never at import): up to twice
    ``COUNCIL_DB_POOL_SIZE`` connections, as the SQLAlchemy pool before it allowed."""
    libpq = config.libpq_url(url)
    pool = _pools.get(libpq)
    if pool is not None:
        return pool
    size = pool_size if pool_size is not None else config.pool_size()
    with _pools_lock:  # threads of one worker share the pool
        pool = _pools.get(libpq)
        if pool is None:
            pool = _pools[libpq] = open_pool(libpq, size=2 * size)
    return pool


# The fault campaign's checker (shared/tools/nemesis) reads the ledger through Council's own
# services as ``UnitOfWork(engine_for(url))``, the name this function had when the pool was
# an engine's; it is that same call.
engine_for = pool_for


def open_pool(url: str, *, size: int, timeout: float = POOL_TIMEOUT_S) -> Pool:
    """A pool of ``size`` connections to ``url`` of its own (not the process's; the
    caller closes it): what :func:`pool_for` opens once per URL."""
    hooks = _Hooks()
    pool = Pool(
        config.libpq_url(url),
        connection_class=Connection,
        kwargs={"application_name": APPLICATION_NAME},
        # At most ``size``, none opened up front: one when a transaction first waits for one,
        # more only when transactions wait together (one opened ahead would be a second
        # connection for the first transaction, which asks before it is ready).
        min_size=0,
        max_size=size,
        configure=hooks.configure,
        check=hooks.check,
        timeout=timeout,
        reconnect_timeout=RECONNECT_S,
        name="council",
        open=False,
    )
    hooks.pool = pool
    _hooks[id(pool)] = hooks
    pool.open()
    return pool


def after_fork() -> None:
    """In a forked child: forget the parent's pools without closing their connections
    (they belong to the parent), so the child opens its own."""
    _inherited.extend(_pools.values())
    _pools.clear()
    _hooks.clear()


def dispose_all() -> None:
    """Close every pool of this process and its connections."""
    for pool in _pools.values():
        pool.close()
        _hooks.pop(id(pool), None)
    _pools.clear()


@contextmanager
def unit_of_work(pool: Pool) -> Iterator[Connection]:
    """One transaction at READ COMMITTED on a pooled connection: commit on success, roll
    back on error, driver errors translated (the unit of work's transactions are these).
    No connection free in the pool within its timeout (every one in a transaction, or the
    server unreachable) is transient. A connection lost on the way (the server dropped
    it, or it now reaches a hot standby: ``pg.lost``) is discarded with every idle one."""
    hooks = _hooks[id(pool)]
    conn = _take(pool, hooks)
    try:
        yield conn
        conn.commit()
    except BaseException as exc:
        cause = exc if isinstance(exc, psycopg.Error) else exc.__cause__
        gone = conn.broken or (isinstance(cause, psycopg.Error) and lost(conn, cause))
        if not gone:
            try:
                conn.rollback()
            except psycopg.Error:
                gone = True
        if gone:
            conn.close()  # given back closed, the pool replaces it
            hooks.lost()
        if isinstance(exc, psycopg.Error):
            raise translate_driver(exc, invalidated=gone) from exc
        raise
    finally:
        hooks.given_back(conn)
        pool.putconn(conn)


def _take(pool: Pool, hooks: _Hooks) -> Connection:
    """A connection within the pool's timeout, waited for in slices of
    :data:`CONNECT_WAIT_S`: after a slice in which the pool failed to connect, or found an
    idle connection dead, the server is unreachable and the transaction fails transient at
    once (a worker's retry tries again) rather than waiting out the whole timeout; a slow
    connect (a cold start under load) or a busy pool is waited for."""
    deadline = time.monotonic() + pool.timeout
    while True:
        errors, losses = _connect_errors(pool), hooks.losses
        left = deadline - time.monotonic()
        try:
            conn = pool.getconn(timeout=max(0.001, min(CONNECT_WAIT_S, left)))
            return conn
        except PoolTimeout as exc:
            failing = _connect_errors(pool) > errors or hooks.losses > losses
            if failing or time.monotonic() >= deadline:
                raise TransientDatabaseError(f"no database connection came free: {exc}") from exc


def _connect_errors(pool: Pool) -> int:
    return int(pool.get_stats().get("connections_errors", 0))
