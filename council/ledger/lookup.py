"""Existence checks shared by the write services: unknown ids are bad input."""

from __future__ import annotations

from collections.abc import Sequence
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


def require_in_thread(conn: Connection, table: Table, row_id: UUID, thread_id: UUID, what: str) -> Any:
    row = require(conn, table, row_id, what)
    require_same_thread(row, thread_id, what)
    return row


def require_all_in_thread(
    conn: Connection, table: Table, row_ids: Sequence[UUID], thread_id: UUID, what: str
) -> dict[UUID, Any]:
    """Rows by id in one query; the first unknown or foreign id (in the given
    order) raises NotFound."""
    if not row_ids:
        return {}
    found = {
        row["id"]: row
        for row in conn.execute(select(table).where(table.c.id.in_(list(set(row_ids))))).mappings()
    }
    for row_id in row_ids:
        if row_id not in found:
            raise NotFound(f"no {what} with id {row_id}")
        require_same_thread(found[row_id], thread_id, what)
    return found
