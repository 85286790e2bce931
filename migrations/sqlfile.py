"""Run a migration's DDL of record: the ``.sql`` file beside its ``.py``."""

from __future__ import annotations

from pathlib import Path

from alembic import op


def run_sql_beside(migration_file: str) -> None:
    """Execute ``<migration>.sql`` on the raw DBAPI cursor: no bind-parameter
    parsing of plpgsql bodies, and the whole file in one round trip."""
    ddl = Path(migration_file).with_suffix(".sql").read_text()
    with op.get_bind().connection.dbapi_connection.cursor() as cursor:  # type: ignore[union-attr]
        cursor.execute(ddl)
