"""Run the Alembic migrations shipped in the ``migrations`` package."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, text

import migrations
from council import config


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(migrations.__file__).parent))
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
