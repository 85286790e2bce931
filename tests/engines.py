"""The tests' own way into a test database: SQLAlchemy engines for the statements a test
writes itself (setting up, going behind the ledger's back, reading what was written),
beside the unit of work Council uses (``uow_of``: the process's psycopg pool for the
same database). Council itself imports no SQLAlchemy outside its migration runner.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from council import config
from council.errors import TransientDatabaseError
from council.ledger import db, migrate
from council.ledger.pg import APPLICATION_NAME, translate_driver
from council.ledger.pg import Connection as PgConnection
from council.ledger.unit import UnitOfWork

_engines: dict[str, Engine] = {}
_given: dict[int, str] = {}  # id(engine) -> the URL it was made from (the pool's key, as Council's)
_lock = threading.Lock()


def engine_for(url: str, *, pool_size: int | None = None) -> Engine:
    """One engine per URL per process, as ``council`` (application_name), READ COMMITTED."""
    sa_url = migrate.dialect_url(url)
    with _lock:
        engine = _engines.get(sa_url)
        if engine is None:
            size = pool_size if pool_size is not None else config.pool_size()
            engine = create_engine(
                sa_url,
                pool_size=size,
                max_overflow=size,
                pool_pre_ping=True,
                isolation_level="READ COMMITTED",
                connect_args={"application_name": APPLICATION_NAME},
            )
            _engines[sa_url] = engine
            _given[id(engine)] = url
    return engine


def url_of(engine: Engine) -> str:
    """The URL the engine was made from: the one a worker of the same test is configured
    with, so both share one pool (a lost connection drains it for both, as in production)."""
    return _given.get(id(engine)) or engine.url.render_as_string(hide_password=False)


def uow_of(engine: Engine) -> UnitOfWork:
    """Council's unit of work on the engine's database (its pool, as big as the engine's)."""
    return UnitOfWork(db.pool_for(url_of(engine), pool_size=engine.pool.size()))  # type: ignore[attr-defined]


def dispose_all() -> None:
    """Close every test engine and every pool of this process."""
    with _lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
        _given.clear()
    db.dispose_all()


@contextmanager
def unit_of_work(engine: Engine) -> Iterator[Connection]:
    """One transaction of the test's own statements: committed on success, rolled back on
    error, driver errors translated as Council translates them (``pg.translate_driver``)."""
    try:
        with engine.begin() as conn:
            yield conn
    except DBAPIError as exc:
        orig = exc.orig if exc.orig is not None else exc
        raise translate_driver(orig, invalidated=exc.connection_invalidated) from exc
    except PoolTimeout as exc:
        raise TransientDatabaseError(f"no database connection came free: {exc}") from exc


def pq(conn: Connection) -> PgConnection:
    """The psycopg connection under a test's SQLAlchemy connection, in its transaction:
    for handing a store the transaction the test's own statements run in."""
    found = conn.connection.driver_connection
    assert isinstance(found, psycopg.Connection)
    return found
