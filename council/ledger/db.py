"""Engines and the transaction primitive; driver errors become the project's errors here.

Nothing builds an engine at import time: the bootstrap calls :func:`engine_for`
once per process and hands the unit of work (``council.ledger.unit``) to the services.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import DBAPIError, DisconnectionError, IntegrityError, OperationalError

from council import config
from council.errors import (
    BadInput,
    Conflict,
    CouncilError,
    Duplicate,
    ImmutableRow,
    TransientDatabaseError,
)

# SQLSTATEs raised by our own triggers (migrations/versions/0001_ledger.sql).
_IMMUTABLE = "CN001"
_STALE_TRANSITION = "CN002"
_TRANSIENT = {
    "40001",  # serialization_failure
    "40P01",  # deadlock_detected
    "55P03",  # lock_not_available (lock_timeout)
    "57014",  # query_canceled (statement_timeout)
}
# The server went away or refused us for now: shutting down or starting up, too many
# connections, or any connection exception (class 08). A psycopg error raised by the
# client itself (refused, reset, "server closed the connection unexpectedly") has no
# SQLSTATE; SQLAlchemy flags a connection it found dead as invalidated.
_CONNECTION_LOST = {"57P01", "57P02", "57P03", "53300"}
_BAD_INPUT = {"22P02", "22001", "22003", "22007", "22008", "23502", "23514"}

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
            isolation_level="READ COMMITTED",
        )
        event.listen(engine, "connect", _on_connect)
        event.listen(engine, "checkin", _on_checkin)
        event.listen(engine, "checkout", _ping_if_idle(engine))
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


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    with dbapi_connection.cursor() as cur:
        cur.execute("SET application_name = 'council'")
    dbapi_connection.commit()


def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
    record.info["idle_since"] = time.monotonic()


def _ping_if_idle(engine: Engine) -> Callable[[Any, Any, Any], None]:
    """Pessimistic disconnect handling, but only for a connection that sat idle:
    a server restart or an idle timeout may have closed it. One checked in a
    moment ago (the previous transaction of the same task) is used as it is,
    which saves a round trip per transaction. A failed ping makes the pool
    discard the connection and open another."""

    def ping(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get("idle_since")
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_S:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:  # any failure: this connection is not usable
            raise DisconnectionError(f"stale pooled connection: {exc}") from exc

    return ping


def sqlstate(exc: BaseException) -> str | None:
    orig = getattr(exc, "orig", None)
    return getattr(orig, "sqlstate", None) if orig is not None else None


def translate(exc: DBAPIError) -> CouncilError:
    """Map a driver error to the project's exception tree (the one place that does)."""
    state = sqlstate(exc)
    orig = getattr(exc, "orig", exc)
    diag = getattr(orig, "diag", None)
    message = (getattr(diag, "message_primary", None) or str(orig)).strip()
    if state == _IMMUTABLE:
        return ImmutableRow(message)
    if state == _STALE_TRANSITION:
        return Conflict(message)
    if state in _TRANSIENT or _connection_lost(exc, state):
        return TransientDatabaseError(message)
    if isinstance(exc, IntegrityError) and state == "23503":
        return BadInput(f"reference to a row that does not exist: {message}")
    if state in _BAD_INPUT:
        return BadInput(message)
    if state == "23505":
        return Duplicate(message)
    if isinstance(exc, IntegrityError):
        return Conflict(message)
    return CouncilError(message)


def _connection_lost(exc: DBAPIError, state: str | None) -> bool:
    if exc.connection_invalidated or state in _CONNECTION_LOST:
        return True
    if state is not None:
        return state.startswith("08")
    return isinstance(exc, OperationalError)


@contextmanager
def unit_of_work(engine: Engine) -> Iterator[Connection]:
    """One transaction at READ COMMITTED: commit on success, roll back on error,
    driver errors translated (the unit of work's transactions are these)."""
    try:
        with engine.begin() as conn:
            yield conn
    except DBAPIError as exc:
        raise translate(exc) from exc
