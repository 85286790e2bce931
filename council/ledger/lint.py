"""What the epistemic-word check needs of a thread's ledger (docs/architecture.md §6): its
items with the durable transitions that license the guarded words."""

from __future__ import annotations

from typing import Literal, TypedDict
from uuid import UUID

from council.domain.epistemic import Category, Item
from council.ledger.pg import Connection, fetch


class _LintRow(TypedDict):
    kind: Literal["node", "branch", "evidence"]
    id: UUID
    text: str
    aliases: list[str]
    settled: bool
    rejected: bool
    preferred: bool


def ledger_items(conn: Connection, thread_id: UUID) -> list[Item]:
    items = []
    for row in fetch(conn, "lint_items", _LintRow, thread_id=thread_id):
        allowed: set[Category] = set()
        if row["settled"]:
            allowed.add("settled")
        if row["rejected"]:
            allowed.add("rejected")
        if row["preferred"]:
            allowed.add("preferred")
        items.append(
            Item(
                id=str(row["id"]),
                kind=row["kind"],
                text=row["text"],
                aliases=tuple(row["aliases"]),
                allowed=frozenset(allowed),
            )
        )
    return items


class Lint:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def items(self, thread_id: UUID) -> list[Item]:
        return ledger_items(self._conn, thread_id)
