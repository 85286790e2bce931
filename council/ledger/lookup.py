"""Existence checks and id resolution shared by the stores: unknown ids are bad input.

An id may be given whole or as a unique prefix of at least six hex digits
(what tables and the page print). A prefix is resolved by a range scan of the
primary key, so it costs an index probe however large the table is.

Each table a row is looked up in has its named queries (council/sql/lookup.sql:
``lookup_<table>``, ``_locked``, ``_prefix``, ``_many``), run on the unit's
connection; a table is named by its name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypedDict, TypeVar
from uuid import UUID

from council.domain.ids import MIN_PREFIX, parse_id
from council.errors import BadInput, NotFound
from council.ledger.pg import Connection, column, fetch, fetch_one

TableRef = str
R = TypeVar("R")


class _Id(TypedDict):
    id: UUID


class InThread(TypedDict):
    """The columns every row of a thread has: what the same-thread checks read."""

    id: UUID
    thread_id: UUID


class StatusInThread(InThread):
    """A row of a thread with its status (a branch: only an active one takes new work)."""

    status: str


T = TypeVar("T", bound=InThread)

_HEX = re.compile(r"^[0-9a-f]+$")
_CANDIDATES = 5


def resolve(conn: Connection, table: TableRef, value: str | UUID, what: str) -> UUID:
    """The id ``value`` names in ``table``: a whole UUID as it is, a prefix when
    exactly one row matches (an ambiguous one is refused with the candidates)."""
    if isinstance(value, UUID):
        return value
    text = value.strip().lower()
    digits = text.replace("-", "")
    if len(digits) == 32:
        return parse_id(text, what)
    if len(digits) < MIN_PREFIX or not _HEX.match(digits):
        raise BadInput(
            f"malformed {what} id: {value!r} (a UUID, or a prefix of at least {MIN_PREFIX} hex digits)"
        )
    low, high = _bounds(digits)
    found = column(conn, _query(table, "_prefix"), UUID, low=low, high=high, limit=_CANDIDATES)
    if not found:
        raise NotFound(f"no {what} with an id starting {text}")
    if len(found) > 1:
        shown = ", ".join(str(candidate) for candidate in found)
        more = " …" if len(found) == _CANDIDATES else ""
        raise BadInput(f"{what} id prefix {text} is ambiguous: {shown}{more}")
    return found[0]


def resolve_all(conn: Connection, table: TableRef, values: Sequence[str | UUID], what: str) -> list[UUID]:
    """Each value resolved, duplicates dropped (first-seen order kept)."""
    return list(dict.fromkeys(resolve(conn, table, value, what) for value in values))


def _bounds(digits: str) -> tuple[UUID, UUID]:
    return UUID(digits.ljust(32, "0")), UUID(digits.ljust(32, "f"))


def require(conn: Connection, table: TableRef, row_id: UUID, what: str, *, lock: bool = False) -> None:
    """NotFound naming ``what`` unless ``table`` holds a row with ``row_id`` (``lock``: locked
    to the end of the transaction). To read the row, :func:`require_row`."""
    require_row(conn, table, _Id, row_id, what, lock=lock)


def require_row(
    conn: Connection, table: TableRef, shape: type[R], row_id: UUID, what: str, *, lock: bool = False
) -> R:
    """The row with ``row_id`` as ``shape`` (a TypedDict of the table's columns it reads, or
    the result type made from its row), or NotFound naming ``what``; ``lock``: locked to the
    end of the transaction."""
    found = fetch_one(conn, _query(table, "_locked" if lock else ""), shape, id=row_id)
    if found is None:
        raise NotFound(f"no {what} with id {row_id}")
    return found


def require_same_thread(row: InThread, thread_id: UUID, what: str) -> None:
    if row["thread_id"] != thread_id:
        raise NotFound(f"{what} {row['id']} belongs to another thread")


def require_in_thread(
    conn: Connection, table: TableRef, shape: type[T], row_id: UUID, thread_id: UUID, what: str
) -> T:
    """The row with ``row_id`` as ``shape``; NotFound naming ``what`` when there is none
    or it belongs to another thread."""
    row = require_row(conn, table, shape, row_id, what)
    require_same_thread(row, thread_id, what)
    return row


def require_all_in_thread(
    conn: Connection, table: TableRef, row_ids: Sequence[UUID], thread_id: UUID, what: str
) -> dict[UUID, InThread]:
    """Rows by id in one query; the first unknown or foreign id (in the given
    order) raises NotFound."""
    found = rows_by_id(conn, table, InThread, row_ids)
    for row_id in row_ids:
        if row_id not in found:
            raise NotFound(f"no {what} with id {row_id}")
        require_same_thread(found[row_id], thread_id, what)
    return found


def rows_by_id(conn: Connection, table: TableRef, shape: type[T], row_ids: Sequence[UUID]) -> dict[UUID, T]:
    """The rows of ``table`` with these ids as ``shape``, by id, in one query (none for
    an unknown id)."""
    if not row_ids:
        return {}
    return {row["id"]: row for row in fetch(conn, _query(table, "_many"), shape, ids=list(set(row_ids)))}


def _query(table: TableRef, variant: str) -> str:
    """The name of the table's lookup query (council/sql/lookup.sql)."""
    return f"lookup_{table}{variant}"
