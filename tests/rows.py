"""Plain SQL for tests that look behind the ledger's back: read rows, count them and
insert fixtures by table name, with ``:param`` binds. The schema is stated once, in
the migrations; a test names tables and columns as the SQL it checks does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from psycopg.types.json import Jsonb
from sqlalchemy import Connection, Engine, text


def _bound(params: Mapping[str, Any]) -> dict[str, Any]:
    """Dicts (and lists of dicts) bound as jsonb, as a jsonb column takes them."""
    return {
        key: Jsonb(value)
        if isinstance(value, dict) or (isinstance(value, list) and value and isinstance(value[0], dict))
        else value
        for key, value in params.items()
    }


def query(engine: Engine | Connection, sql: str, **params: Any) -> list[dict[str, Any]]:
    """The rows of ``sql`` as dicts (on a connection of its own when given the engine)."""
    if isinstance(engine, Connection):
        return [dict(r) for r in engine.execute(text(sql), _bound(params)).mappings()]
    with engine.begin() as conn:
        return query(conn, sql, **params)


def rows(engine: Engine | Connection, table: str, where: str = "true", **params: Any) -> list[dict[str, Any]]:
    """Every row of ``table`` matching ``where``."""
    return query(engine, f"SELECT * FROM {table} WHERE {where}", **params)


def row(engine: Engine | Connection, table: str, where: str = "true", **params: Any) -> dict[str, Any]:
    """The one row of ``table`` matching ``where``."""
    [found] = rows(engine, table, where, **params)
    return found


def scalar(engine: Engine | Connection, sql: str, **params: Any) -> Any:
    """The first column of the one row of ``sql``."""
    [found] = query(engine, sql, **params)
    return next(iter(found.values()))


def count(engine: Engine | Connection, table: str, where: str = "true", **params: Any) -> int:
    return int(scalar(engine, f"SELECT count(*) FROM {table} WHERE {where}", **params))


def insert(conn: Engine | Connection, table: str, **values: Any) -> dict[str, Any]:
    """Insert one row of ``table`` and return it as stored."""
    columns = ", ".join(values)
    binds = ", ".join(f":{name}" for name in values)
    [found] = query(conn, f"INSERT INTO {table} ({columns}) VALUES ({binds}) RETURNING *", **values)
    return found


def tables(engine: Engine | Connection) -> list[str]:
    """The ledger's tables, by name (what the migrations built)."""
    return [
        r["tablename"]
        for r in query(
            engine, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
        )
    ]


def counts(engine: Engine | Connection) -> dict[str, int]:
    """How many rows each of the ledger's tables holds (a write that wrote nothing leaves them)."""
    return {name: count(engine, f'"{name}"') for name in tables(engine)}


def execute(conn: Connection, sql: str, **params: Any) -> None:
    """Run a statement whose rows (if any) are not wanted, in the caller's transaction."""
    conn.execute(text(sql), _bound(params))
