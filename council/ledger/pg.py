"""How the ledger talks to Postgres: named SQL (``council/sql``) on a psycopg
connection, rows typed at the boundary, driver errors as the project's errors.

A store runs each named query through :func:`fetch`, :func:`fetch_one`,
:func:`column`, :func:`execute` or :func:`execute_many` on the unit of work's
connection (``Tx.conn``, from the process's pool, ``council.ledger.db``). A CLI read
such as `council thread list --json`, started by scripts hundreds of times, runs the
same SQL on a connection of its own (:func:`transaction`) instead of opening a pool.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

import psycopg
from psycopg.rows import RowFactory, RowMaker, TupleRow, class_row, dict_row, tuple_row

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
    from psycopg._cursor_base import BaseCursor  # the type psycopg's row factories take

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
# SQLSTATE. Such a connection is discarded (``council.ledger.db``).
_CONNECTION_LOST = {"57P01", "57P02", "57P03", "53300"}
# A write refused by a hot standby (read_only_sql_transaction): the connection reached a
# server in recovery — a standby, or the old primary of a failover started again as one —
# and must be dropped and the work retried, on the primary a new connection finds
# (``target_session_attrs=read-write``). The same SQLSTATE from a primary (a write in a
# read-only transaction) is a bug, not a lost connection. (As main's issue-47 pg.on_standby.)
_READ_ONLY_SQL_TRANSACTION = "25006"
_BAD_INPUT = {"22P02", "22001", "22003", "22007", "22008", "23502", "23514"}
APPLICATION_NAME = "council"
# The columns of a row read whole into a pydantic result that validates them (a "show" read
# merging several queries): typed where it is validated, not here.
Row = dict[str, object]

# Every statement names its cursor's row factory; the connection's own is psycopg's default.
Connection = psycopg.Connection[TupleRow]


def translate_driver(error: BaseException, *, invalidated: bool = False) -> CouncilError:
    """Map a driver (DB-API) error to the project's exception tree (the one place
    that does); ``invalidated``: the connection was found dead."""
    state: str | None = getattr(error, "sqlstate", None)
    diag = getattr(error, "diag", None)
    message = (getattr(diag, "message_primary", None) or str(error)).strip()
    integrity = isinstance(error, psycopg.IntegrityError)
    if state == _IMMUTABLE:
        return ImmutableRow(message)
    if state == _STALE_TRANSITION:
        return Conflict(message)
    if state in _TRANSIENT or invalidated or connection_lost(error):
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


def on_standby(error: BaseException, pq: Connection | None) -> bool:
    """The error is a write refused because ``pq``'s server is a hot standby (it reports
    ``in_hot_standby``, a ParameterStatus of Postgres 14+, on every connection)."""
    if getattr(error, "sqlstate", None) != _READ_ONLY_SQL_TRANSACTION or pq is None or pq.closed:
        return False
    return pq.info.parameter_status("in_hot_standby") == "on"


def lost(pq: Connection, error: BaseException) -> bool:
    """The connection is not to be used again: the server dropped it, or it is a standby."""
    return pq.broken or connection_lost(error) or on_standby(error, pq)


def connection_lost(error: BaseException) -> bool:
    """The error says the server went away: transient; the connection is to be discarded."""
    state: str | None = getattr(error, "sqlstate", None)
    if state in _CONNECTION_LOST:
        return True
    if state is not None:
        return state.startswith("08")
    return isinstance(error, psycopg.OperationalError)


@contextmanager
def transaction(url: str) -> Iterator[Connection]:
    """One READ COMMITTED, read-only transaction on a connection of its own
    (what the pool's connections are: application_name ``council``), committed
    when the block ends and rolled back when it raises; the connection is closed
    after. Driver errors leave translated."""
    try:
        with psycopg.connect(config.libpq_url(url), application_name=APPLICATION_NAME) as conn:
            conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
            conn.read_only = True
            yield conn
    except psycopg.Error as exc:
        raise translate_driver(exc) from exc


def id_of(row: Row, key: str = "id") -> UUID:
    """The UUID in column ``key`` of a row read whole."""
    found = row[key]
    if not isinstance(found, UUID):
        raise TypeError(f"column {key} is not a uuid: {type(found).__name__}")
    return found


# ------------------------------------------------------------ typed named SQL
#
# How a store talks to Postgres: a named query (council/sql) on the unit's psycopg
# connection, its rows typed at the boundary — a TypedDict or a frozen dataclass per
# row shape (the domain's result type where one exists: one definition per shape).
# A phase of a run written as one SQL function is a named query too
# (``SELECT * FROM council_..._v1(:a, :b)``), read with :func:`fetch_one`.

R = TypeVar("R")


def fetch(
    conn: Connection, name: str, shape: type[R], /, *, screen: bool = True, **params: object
) -> list[R]:
    """The rows of the named query, each as ``shape`` (a TypedDict, read as a dict of
    column -> value, or a dataclass built from the columns)."""
    return _run(conn, name, params, _factory(shape), screen=screen)


def fetch_one(conn: Connection, name: str, shape: type[R], /, **params: object) -> R | None:
    """The first row of the named query as ``shape``, None when it returns none."""
    found = _run(conn, name, params, _factory(shape))
    return found[0] if found else None


def column(conn: Connection, name: str, of: type[R], /, *, screen: bool = True, **params: object) -> list[R]:
    """The first column of each row of the named query (values of type ``of``)."""
    rows = _run(conn, name, params, tuple_row, screen=screen)
    return [row[0] for row in rows]


def execute(conn: Connection, name: str, /, *, screen: bool = True, **params: object) -> None:
    """Run the named statement; whatever rows it returns are not wanted."""
    _run(conn, name, params, tuple_row, screen=screen)


def execute_many(conn: Connection, name: str, params: Sequence[Mapping[str, object]], /) -> None:
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
    validate = getattr(shape, "model_validate", None)
    if validate is not None:  # a pydantic model: the domain's result, validated from the columns
        return _validated(validate)
    return cast("RowFactory[R]", dict_row)  # a TypedDict is a dict at run time


def _validated(validate: Callable[[dict[str, object]], R]) -> RowFactory[R]:
    def factory(cur: BaseCursor[Any, Any]) -> RowMaker[R]:
        names = [c.name for c in cur.description or ()]

        def make(values: Sequence[object]) -> R:
            return validate(dict(zip(names, values, strict=True)))

        return make

    return factory


def _run(
    conn: Connection,
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
    when first written. A connection found lost is discarded by the unit of work
    (``council.ledger.db.unit_of_work``) when the error leaves its block."""
    from council.known_secrets import refuse_in_parameters

    if screen and _writes(name):
        refuse_in_parameters(params)
    try:
        with conn.cursor(row_factory=factory) as cur:
            if many:
                cur.executemany(driver_sql(name), params)
                return []
            cur.execute(driver_sql(name), params)  # a dict, even empty: `%%` is then read as `%`
            return cur.fetchall() if cur.description is not None else []
    except psycopg.Error as exc:
        raise translate_driver(exc, invalidated=lost(conn, exc)) from exc
