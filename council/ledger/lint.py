"""The epistemic-word check against a thread's ledger (DESIGN §6)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Engine

from council.domain.epistemic import Category, Item, guarded_words, lint
from council.ledger import tables as t
from council.ledger.db import unit_of_work
from council.ledger.lookup import require
from council.sql import query


def ledger_items(conn: Connection, thread_id: UUID) -> list[Item]:
    items = []
    for row in conn.execute(query("lint_items"), {"thread_id": thread_id}).mappings():
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


def lint_text(engine: Engine, thread_id: UUID, text: str) -> list[dict[str, Any]]:
    """Each sentence that uses a guarded word about an item lacking the matching transition."""
    with unit_of_work(engine) as conn:
        require(conn, t.threads, thread_id, "thread")
        return lint_in(conn, thread_id, text)


def lint_in(conn: Connection, thread_id: UUID, text: str) -> list[dict[str, Any]]:
    """:func:`lint_text` inside the caller's transaction (a thread known to exist)."""
    if not guarded_words(text):
        return []  # nothing to check against the ledger: skip loading it
    return [
        {
            "sentence": f.sentence,
            "word": f.word,
            "category": f.category,
            "item_id": f.item_id,
            "reason": f.reason,
        }
        for f in lint(text, ledger_items(conn, thread_id))
    ]
