"""Memory item status: every change is an appended transition and an event,
written by one named statement (``move_memory_batch``, council/sql/reversal.sql) for one
move or many, on the unit's psycopg connection."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TypedDict
from uuid import UUID

from council.domain.reassessment import Move, move
from council.ledger.pg import Connection, execute


class MemoryState(TypedDict):
    """A memory item as a move reads it (``consolidation_memory_item``)."""

    id: UUID
    thread_id: UUID
    status: str


def move_many(conn: Connection, moves: Sequence[Move], actor: str) -> None:
    """Append the transitions (applied in order by the trigger) and their events in one statement."""
    if moves:
        execute(conn, "move_memory_batch", moves=json.dumps(list(moves)), actor=actor)


def move_memory(
    conn: Connection, memory: MemoryState, to: str, reason: str, actor: str, details: Mapping[str, object]
) -> str:
    """Move one memory item (its status is updated in place)."""
    move_many(conn, [move(memory["id"], memory["thread_id"], memory["status"], to, reason, details)], actor)
    memory["status"] = to
    return to
