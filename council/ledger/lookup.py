"""Existence checks shared by the write services: unknown ids are bad input."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Table, select

from council.errors import NotFound


def require(conn: Connection, table: Table, row_id: UUID, what: str, *, lock: bool = False) -> Any:
    """Return the row with ``row_id`` or raise NotFound naming ``what``."""
    query = select(table).where(table.c.id == row_id)
    if lock:
        query = query.with_for_update()
    row = conn.execute(query).mappings().first()
    if row is None:
        raise NotFound(f"no {what} with id {row_id}")
    return row


def require_same_thread(row: Any, thread_id: UUID, what: str) -> None:
    if row["thread_id"] != thread_id:
        raise NotFound(f"{what} {row['id']} belongs to another thread")
