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

import dataclasses
import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, cast

import psycopg
from psycopg.rows import RowFactory, TupleRow, class_row, dict_row, namedtuple_row, tuple_row

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

if TYPE_CHECKING:
    from sqlalchemy import Connection as SAConnection

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
# A write refused by a hot standby (read_only_sql_transaction): the connection reached a
# server in recovery — a standby, or the old primary of a failover started again as one —
# and must be dropped and the work retried, on the primary a new connection finds
# (``target_session_attrs=read-write``; docs/operations/replication.md). The same SQLSTATE
# from a primary (a write in a read-only transaction) is a bug, not a lost connection.
_READ_ONLY_SQL_TRANSACTION = "25006"
_BAD_INPUT = {"22P02", "22001", "22003", "22007", "22008", "23502", "23514"}
APPLICATION_NAME = "council"

# Every statement names its cursor's row factory; the connection's own is psycopg's default.
Connection = psycopg.Connection[TupleRow]


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


def on_standby(error: BaseException, pq: psycopg.Connection[Any] | None) -> bool:
    """The error is a write refused because ``pq``'s server is a hot standby (it reports
    ``in_hot_standby``, a ParameterStatus of Postgres 14+, on every connection): a
    connection to drop, not a bug. The caller marks it lost (``invalidated``), which makes
    :func:`translate_driver` call it transient."""
    if getattr(error, "sqlstate", None) != _READ_ONLY_SQL_TRANSACTION or pq is None or pq.closed:
        return False
    return pq.info.parameter_status("in_hot_standby") == "on"


def lost(pq: Connection, error: BaseException) -> bool:
    """The connection is not to be used again: the server dropped it, or it is a standby."""
    return pq.broken or on_standby(error, pq)


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


def in_transaction(
    conn: Unit, name: str, params: Mapping[str, object], *, as_tuples: bool = False
) -> list[Any]:
    """The rows of the named query run on the psycopg connection under ``conn``, a
    SQLAlchemy connection, in its open transaction: as dicts, or as named tuples
    (``as_tuples``). What a run and the committer execute on a busy worker (the run's
    statements, the briefing's frontier, the output check's reads, every committer
    statement) skips SQLAlchemy's per-statement machinery this way, about 0.08 ms of
    CPU a statement; the statement and its transaction are the same. Driver errors
    leave translated. A connection the server dropped is invalidated, and with it
    every connection the pool holds, as SQLAlchemy's own execution does on a
    disconnect: after a restart they are all dead, and each would otherwise cost a
    failed try. An INSERT's or UPDATE's bound text passes the one check of what the ledger
    stores (:func:`_run`). (The untyped form; a store converted to typed rows uses
    :func:`fetch`.)"""
    if as_tuples:
        return _run(conn, name, params, namedtuple_row)
    return _run(conn, name, params, dict_row)


# ------------------------------------------------------------ typed named SQL
#
# How a store talks to Postgres: a named query (council/sql) on the unit's psycopg
# connection, its rows typed at the boundary — a TypedDict or a frozen dataclass per
# row shape. ``conn`` is the unit's connection: the psycopg connection itself
# (``Tx.pg``), or, while some stores are still handed the SQLAlchemy connection the
# transaction was begun on, that connection, whose psycopg connection is used.

Unit: TypeAlias = "Connection | SAConnection"
R = TypeVar("R")


def driver(conn: Unit) -> Connection:
    """The psycopg connection of the unit's transaction."""
    if isinstance(conn, psycopg.Connection):
        return conn
    found = conn.connection.driver_connection
    assert isinstance(found, psycopg.Connection)
    return found


def fetch(conn: Unit, name: str, shape: type[R], /, *, screen: bool = True, **params: object) -> list[R]:
    """The rows of the named query, each as ``shape`` (a TypedDict, read as a dict of
    column -> value, or a dataclass built from the columns)."""
    return _run(conn, name, params, _factory(shape), screen=screen)


def fetch_one(conn: Unit, name: str, shape: type[R], /, **params: object) -> R | None:
    """The first row of the named query as ``shape``, None when it returns none."""
    found = _run(conn, name, params, _factory(shape))
    return found[0] if found else None


def column(conn: Unit, name: str, of: type[R], /, *, screen: bool = True, **params: object) -> list[R]:
    """The first column of each row of the named query (values of type ``of``)."""
    rows = _run(conn, name, params, tuple_row, screen=screen)
    return [row[0] for row in rows]


def execute(conn: Unit, name: str, /, *, screen: bool = True, **params: object) -> None:
    """Run the named statement; whatever rows it returns are not wanted."""
    _run(conn, name, params, tuple_row, screen=screen)


def execute_many(conn: Unit, name: str, params: Sequence[Mapping[str, object]], /) -> None:
    """Run the named statement once per parameter set, pipelined (one round trip)."""
    if params:
        _run(conn, name, params, tuple_row, many=True)


@functools.cache
def _writes(name: str) -> bool:
    return _WRITES.search(driver_sql(name)) is not None


_WRITES = re.compile(r"\b(INSERT|UPDATE)\b", re.IGNORECASE)


def _factory(shape: type[R]) -> RowFactory[R]:
    if dataclasses.is_dataclass(shape):
        return class_row(shape)
    return cast("RowFactory[R]", dict_row)  # a TypedDict is a dict at run time


def _run(
    conn: Unit,
    name: str,
    params: Mapping[str, object] | Sequence[Mapping[str, object]],
    factory: RowFactory[R],
    *,
    many: bool = False,
    screen: bool = True,
) -> list[R]:
    """Execute the named query on the unit's psycopg connection; driver errors leave
    translated. Every INSERT or UPDATE passes the one check of what the ledger stores
    (docs/architecture.md §11): a bound text (JSON included) that holds a known secret,
    as written or as a reader decodes it, is refused (BadInput), never rewritten — what
    a model or agent returns was redacted where it arrived — unless ``screen`` is false:
    a statement of the commit path that only writes text read from rows already checked
    when first written. A connection the server dropped under a SQLAlchemy transaction
    is invalidated with the whole pool (see :func:`in_transaction`); under ``Tx.pg`` the
    unit of work does the same when the error leaves the block."""
    from council.known_secrets import refuse_in_parameters

    pq = driver(conn)
    if screen and _writes(name):
        refuse_in_parameters(params)
    try:
        with pq.cursor(row_factory=factory) as cur:
            if many:
                cur.executemany(driver_sql(name), params)
                return []
            cur.execute(driver_sql(name), params)  # a dict, even empty: `%%` is then read as `%`
            return cur.fetchall() if cur.description is not None else []
    except psycopg.Error as exc:
        dropped = lost(pq, exc)
        if dropped and not isinstance(conn, psycopg.Connection):
            invalidate_pool(conn, exc)
        raise translate_driver(exc, invalidated=dropped) from exc


def invalidate_pool(conn: SAConnection, exc: BaseException) -> None:
    """What SQLAlchemy's own handler does on a disconnect: every connection made before
    now is recycled at its next checkout, then this one is invalidated."""
    conn.engine.pool._invalidate(conn.connection, exc)
    conn.invalidate(exc)
