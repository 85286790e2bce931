"""Run the Alembic migrations: ``council/migrations`` in an installed wheel, ``migrations/``
at the root of a source tree (the same files; setup.py copies them into the wheel).

The one module of Council that uses SQLAlchemy (Alembic runs on it); what it raises
leaves as :class:`MigrationFailed`."""

from __future__ import annotations

from pathlib import Path

from alembic import command, op
from alembic.config import Config
from sqlalchemy.exc import SQLAlchemyError

from council import config
from council.errors import CouncilError

_PACKAGE = Path(__file__).resolve().parents[1]


def script_location() -> Path:
    """Where the migrations are: inside the installed package, else the source tree's."""
    shipped = _PACKAGE / "migrations"
    return shipped if shipped.is_dir() else _PACKAGE.parent / "migrations"


def run_sql_beside(migration_file: str) -> None:
    """Execute a migration's DDL of record, the ``.sql`` file beside its ``.py``, on the raw
    DBAPI cursor: no bind-parameter parsing of plpgsql bodies, and the whole file in one
    round trip. Every migration calls it; a migration imports it from here, never from
    ``migrations``, which a wheel does not install."""
    ddl = Path(migration_file).with_suffix(".sql").read_text()
    with op.get_bind().connection.dbapi_connection.cursor() as cursor:  # type: ignore[union-attr]
        cursor.execute(ddl)


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    cfg.set_main_option("sqlalchemy.url", dialect_url(url).replace("%", "%%"))
    return cfg


class MigrationFailed(CouncilError):
    """The migration (or reading the revision) failed: its first line says why."""


def dialect_url(url: str) -> str:
    """The URL for SQLAlchemy's psycopg 3 dialect. SQLAlchemy cannot read libpq's
    multi-host list (``h1:p1,h2:p2``) where a host goes; its psycopg dialect takes the same
    list as repeated ``host=h:p`` query parameters and hands libpq ``host`` and ``port``
    lists, so the list is moved there (target_session_attrs and every other parameter stay
    as they are; docs/operations/replication.md)."""
    userinfo, hosts, tail = config.split_hosts(url)
    if len(hosts) < 2:
        return "postgresql+psycopg://" + config.libpq_url(url).removeprefix("postgresql://")
    path, sep, query = tail.partition("?")
    moved = "&".join(f"host={h}" for h in hosts)
    return f"postgresql+psycopg://{userinfo}{path or '/'}?{moved}{'&' + query if sep and query else ''}"


def upgrade(url: str, revision: str = "head") -> str:
    """Migrate the database at ``url`` to ``revision``; returns the new revision."""
    try:
        command.upgrade(alembic_config(url), revision)
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None) or exc
        raise MigrationFailed((str(orig).strip().splitlines() or [type(orig).__name__])[0]) from exc
    return current_revision(url) or ""


def current_revision(url: str) -> str | None:
    """The Alembic revision of the database at ``url``; None when it is not migrated.
    Driver errors leave translated (``pg.translate_driver``)."""
    from council.ledger.pg import column, transaction

    with transaction(url) as conn:
        if not column(conn, "alembic_table", bool)[0]:
            return None
        found = column(conn, "alembic_revision", str)
    return found[0] if found else None
