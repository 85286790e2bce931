"""The ledger over psycopg alone: driver errors as the project's errors, and the
transaction a read runs in when no SQLAlchemy engine is wanted.

A CLI read such as `council thread list --json` is started by scripts hundreds
of times, and importing SQLAlchemy (with building an engine and its dialect's
first-connect queries) costs more than the whole read. Such a read runs its named
query (``council/sql``, :func:`council.sql.driver_sql`) on a psycopg connection:
one of its own here (:func:`transaction`), or the driver connection under a
pooled SQLAlchemy transaction when the process has an engine
(``UnitOfWork.reading``) — the same SQL either way. Importing this module imports
no SQLAlchemy; ``db.translate`` maps SQLAlchemy's wrapped errors with
:func:`translate_driver`, so both paths fail alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import dict_row, namedtuple_row

from council import config
from council.errors import (
    BadInput,
    Conflict,
    CouncilError,
    Duplicate,
    ImmutableRow,
    TransientDatabaseError,
)
from council.sql import driver_sql

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
APPLICATION_NAME = "council"

Connection = psycopg.Connection[Any]


def translate_driver(error: BaseException, *, invalidated: bool = False) -> CouncilError:
    """Map a driver (DB-API) error to the project's exception tree (the one place
    that does); ``invalidated``: SQLAlchemy found the connection dead."""
    state: str | None = getattr(error, "sqlstate", None)
    diag = getattr(error, "diag", None)
    message = (getattr(diag, "message_primary", None) or str(error)).strip()
    integrity = isinstance(error, psycopg.IntegrityError)
    if state == _IMMUTABLE:
        return ImmutableRow(message)
    if state == _STALE_TRANSITION:
        return Conflict(message)
    if state in _TRANSIENT or _connection_lost(error, state, invalidated):
        return TransientDatabaseError(message)
    if integrity and state == "23503":
        return BadInput(f"reference to a row that does not exist: {message}")
    if state in _BAD_INPUT:
        return BadInput(message)
    if state == "23505":
        return Duplicate(message)
    if integrity:
        return Conflict(message)
    return CouncilError(message)


def _connection_lost(error: BaseException, state: str | None, invalidated: bool) -> bool:
    if invalidated or state in _CONNECTION_LOST:
        return True
    if state is not None:
        return state.startswith("08")
    return isinstance(error, psycopg.OperationalError)


@contextmanager
def transaction(url: str) -> Iterator[Connection]:
    """One READ COMMITTED, read-only transaction on a connection of its own
    (what the engine's connections are: application_name ``council``), committed
    when the block ends and rolled back when it raises; the connection is closed
    after. Driver errors leave translated."""
    try:
        with psycopg.connect(config.libpq_url(url), application_name=APPLICATION_NAME) as conn:
            conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
            conn.read_only = True
            yield conn
    except psycopg.Error as exc:
        raise translate_driver(exc) from exc


def rows(conn: Connection, name: str, **params: Any) -> list[dict[str, Any]]:
    """The rows of the named query (council/sql) as dicts of column -> value."""
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(driver_sql(name), params)  # a dict, even empty: `%%` is then read as `%`
        return cur.fetchall()


def in_transaction(conn: Any, name: str, params: dict[str, Any], *, as_tuples: bool = False) -> list[Any]:
    """The rows of the named query run on the psycopg connection under ``conn``, a
    SQLAlchemy connection, in its open transaction: as dicts, or as named tuples
    (``as_tuples``). What a run and the committer execute on a busy worker (the run's
    statements, the briefing's frontier, the output check's reads, every committer
    statement) skips SQLAlchemy's per-statement machinery this way, about 0.08 ms of
    CPU a statement; the statement and its transaction are the same. Driver errors
    leave translated. A connection the server dropped is invalidated, and with it
    every connection the pool holds, as SQLAlchemy's own execution does on a
    disconnect: after a restart they are all dead, and each would otherwise cost a
    failed try."""
    driver: Connection = conn.connection.driver_connection
    try:
        with driver.cursor(row_factory=namedtuple_row if as_tuples else dict_row) as cur:
            cur.execute(driver_sql(name), params)
            return cur.fetchall() if cur.description is not None else []
    except psycopg.Error as exc:
        lost = driver.broken
        if lost:
            # What SQLAlchemy's own handler does on a disconnect: every connection made before
            # now is recycled at its next checkout, then this one is invalidated.
            conn.engine.pool._invalidate(conn.connection, exc)
            conn.invalidate(exc)
        raise translate_driver(exc, invalidated=lost) from exc
