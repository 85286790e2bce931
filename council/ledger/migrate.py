"""Run the Alembic migrations: ``council/migrations`` in an installed wheel, ``migrations/``
at the root of a source tree (the same files; setup.py copies them into the wheel)."""

from __future__ import annotations

from pathlib import Path

from alembic import command, op
from alembic.config import Config
from sqlalchemy import Engine, text

from council import config

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
    cfg.set_main_option("sqlalchemy.url", config.sqlalchemy_url(url).replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> str:
    """Migrate the database at ``url`` to ``revision``; returns the new revision."""
    command.upgrade(alembic_config(url), revision)
    return current_revision(url) or ""


def current_revision(url: str) -> str | None:
    from council.ledger.db import engine_for

    return revision_of(engine_for(url))


def revision_of(engine: Engine) -> str | None:
    with engine.connect() as conn:
        exists = conn.execute(text("SELECT to_regclass('alembic_version') IS NOT NULL")).scalar()
        if not exists:
            return None
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
