"""Engines and the transaction primitive; driver errors become the project's errors here.

Nothing builds an engine at import time: the bootstrap calls :func:`engine_for`
once per process and hands the unit of work (``council.ledger.unit``) to the services.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import psycopg
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import DBAPIError, DisconnectionError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from council import config
from council.errors import CouncilError, TransientDatabaseError
from council.ledger.pg import APPLICATION_NAME, on_standby, translate_driver

if TYPE_CHECKING:
    from sqlalchemy.engine.interfaces import DBAPIConnection, ExceptionContext
    from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

# A pooled connection idle at least this long is pinged before it is handed out.
PING_AFTER_IDLE_S = 1.0


_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def engine_for(url: str, *, pool_size: int | None = None) -> Engine:
    """One engine per URL per process (created lazily, never at import)."""
    sa_url = config.sqlalchemy_url(url)
    engine = _engines.get(sa_url)
    if engine is not None:
        return engine
    if pool_size is None:
        pool_size = config.pool_size()
    with _engines_lock:  # threads of one worker share the engine
        engine = _engines.get(sa_url)
        if engine is not None:
            return engine
        engine = create_engine(
            sa_url,
            pool_size=pool_size,
            max_overflow=pool_size,
            # The connection checked in last goes out first: a few connections do the work and
            # stay warm (their catalog caches filled, their statements prepared), the rest idle.
            pool_use_lifo=True,
            isolation_level="READ COMMITTED",
        )
        event.listen(engine, "connect", _on_connect)
        event.listen(engine, "checkin", _on_checkin)
        event.listen(engine, "checkout", _ping_if_idle(engine))
        event.listen(engine, "handle_error", _standby_is_a_disconnect)
        _engines[sa_url] = engine
    return engine


def after_fork() -> None:
    """In a forked child: forget the parent's pooled connections without closing
    them (they belong to the parent), so the child opens its own."""
    for engine in _engines.values():
        engine.dispose(close=False)
    _engines.clear()


def dispose_all() -> None:
    for engine in _engines.values():
        engine.dispose()
    _engines.clear()


def _on_connect(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    cur = dbapi_connection.cursor()
    try:
        cur.execute(f"SET application_name = '{APPLICATION_NAME}'")
    finally:
        cur.close()
    dbapi_connection.commit()


def _standby_is_a_disconnect(context: ExceptionContext) -> None:
    """A write a hot standby refused (SQLSTATE 25006 on a server in recovery, pg.on_standby)
    counts as a disconnect: SQLAlchemy then invalidates the connection and the pool's older
    ones, and the error is transient, so the work is retried on a new connection, which
    ``target_session_attrs=read-write`` takes to the primary (docs/operations/replication.md)."""
    conn = context.connection
    driver = conn.connection.driver_connection if conn is not None and not conn.invalidated else None
    if isinstance(driver, psycopg.Connection) and on_standby(context.original_exception, driver):
        context.is_disconnect = True


def _on_checkin(_dbapi_connection: DBAPIConnection | None, record: ConnectionPoolEntry) -> None:
    record.info["idle_since"] = time.monotonic()


def _ping_if_idle(
    engine: Engine,
) -> Callable[[DBAPIConnection, ConnectionPoolEntry, PoolProxiedConnection], None]:
    """Pessimistic disconnect handling, but only for a connection that sat idle:
    a server restart or an idle timeout may have closed it. One checked in a
    moment ago (the previous transaction of the same task) is used as it is,
    which saves a round trip per transaction. A failed ping makes the pool
    discard the connection and open another."""

    def ping(
        dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry, _proxy: PoolProxiedConnection
    ) -> None:
        idle_since = record.info.get("idle_since")
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_S:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:  # any failure: this connection is not usable
            raise DisconnectionError(f"stale pooled connection: {exc}") from exc

    return ping


def translate(exc: DBAPIError) -> CouncilError:
    """Map a driver error SQLAlchemy wrapped to the project's exception tree
    (``pg.translate_driver``, the one mapping)."""
    orig = exc.orig if exc.orig is not None else exc
    return translate_driver(orig, invalidated=exc.connection_invalidated)


@contextmanager
def unit_of_work(engine: Engine) -> Iterator[Connection]:
    """One transaction at READ COMMITTED: commit on success, roll back on error,
    driver errors translated (the unit of work's transactions are these). No connection
    free in the pool within its timeout (every one in a transaction) is transient."""
    try:
        with engine.begin() as conn:
            yield conn
    except DBAPIError as exc:
        raise translate(exc) from exc
    except PoolTimeout as exc:
        raise TransientDatabaseError(f"no database connection came free: {exc}") from exc
