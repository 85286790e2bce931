"""The bounded reversal cascade (docs/architecture.md §5): when a consolidation becomes
contested, the memory of every node that depends on it, to CASCADE_DEPTH
levels, becomes provisional.

Each step is one transaction and bounded; what it cuts off is a *continuation*
(``cascade_continuations``, migration 0008), written in that same
transaction and marked continued in the transaction of the step that
continues it. So the cascade is bounded per step and never lossy: a lost
message leaves a row for the sweep, a duplicated one finds its row taken.
Named SQL (council/sql/cascade.sql, reversal.sql's ``dependents``) on the unit's
psycopg connection.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from itertools import islice
from typing import TypedDict
from uuid import UUID

from council.domain.reassessment import Moves, move
from council.domain.results.reversal import CascadeStep
from council.ledger import memory
from council.ledger.pg import Connection, column, fetch

CASCADE_DEPTH = 3
CASCADE_STEP_LIMIT = 200


class _Continuation(TypedDict):
    id: UUID
    pending: list[tuple[str, int]]  # [version id, depth left], as JSON


class _Dependent(TypedDict):
    """A version that depends on ``depends_on``, with its live consolidation and memory."""

    depends_on: UUID
    version_id: UUID
    consolidation_id: UUID | None
    memory_item_id: UUID | None
    memory_status: str | None
    thread_id: UUID | None


def begin(conn: Connection, pending: Sequence[tuple[UUID | str, int]], *, actor: str) -> UUID | None:
    """Record versions still to expand (each with its depth left) as a continuation,
    in the caller's transaction; None when nothing is left to expand."""
    todo = [[str(version), depth] for version, depth in pending if depth > 0]
    if not todo:
        return None
    [continuation_id] = column(conn, "record_continuation", UUID, pending=json.dumps(todo), actor=actor)
    return continuation_id


def step(conn: Connection, continuation_ids: Sequence[UUID], *, actor: str) -> CascadeStep:
    """One bounded step: take the given continuations (those no other step took),
    expand their versions breadth first, marking the memory of every node that
    depends on them provisional, until CASCADE_STEP_LIMIT versions were expanded
    or CASCADE_STEP_LIMIT dependents reached in this step. What is left is
    recorded as a new continuation (``continuation_id``). A single version
    with more dependents than the limit is expanded alone.

    The dependents of a whole stretch of the queue are read in one statement
    and the step's marks written in one.
    """
    if not continuation_ids:
        return CascadeStep(
            continued=[], reached=0, marked_provisional=0, continuation=[], continuation_id=None
        )
    taken = sorted(
        fetch(conn, "take_continuations", _Continuation, ids=[str(i) for i in continuation_ids]),
        key=lambda row: str(row["id"]),
    )
    depths: dict[str, int] = {}
    for continuation in taken:
        for version, depth in continuation["pending"]:
            depths[version] = max(depth, depths.get(version, 0))
    queue = deque(depths.items())
    reached = expanded = 0
    full = False
    seen = set(depths)
    moves: Moves = []
    marked: set[str] = set()  # statuses were read before this step's marks: mark each item once
    while queue and expanded < CASCADE_STEP_LIMIT and not full:
        stretch = list(islice(queue, CASCADE_STEP_LIMIT - expanded))
        found: dict[str, list[_Dependent]] = {}
        versions = sorted({version for version, _ in stretch})
        for row in fetch(conn, "dependents", _Dependent, versions=versions):
            found.setdefault(str(row["depends_on"]), []).append(row)
        for version, depth in stretch:
            rows = found.get(version, [])
            if reached and reached + len(rows) > CASCADE_STEP_LIMIT:
                full = True
                break
            queue.popleft()
            expanded += 1
            for row in rows:
                dependent, memory_id, thread_id = (
                    str(row["version_id"]),
                    row["memory_item_id"],
                    row["thread_id"],
                )
                reached += 1
                if (
                    memory_id is not None
                    and thread_id is not None  # always, with a memory item: its consolidation's thread
                    and row["memory_status"] == "stable"
                    and str(memory_id) not in marked
                ):
                    marked.add(str(memory_id))
                    reason = f"depends on contested {version}"
                    moves.append(
                        move(memory_id, thread_id, "stable", "provisional", reason, {"via": version})
                    )
                if depth > 1 and dependent not in seen:
                    seen.add(dependent)
                    queue.append((dependent, depth - 1))
    memory.move_many(conn, moves, actor)
    left = [(UUID(version), depth) for version, depth in queue]
    return CascadeStep(
        continued=[continuation["id"] for continuation in taken],
        reached=reached,
        marked_provisional=len(moves),
        continuation=left,
        continuation_id=begin(conn, left, actor=actor),
    )


class Cascades:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def step(self, continuation_ids: Sequence[UUID], *, actor: str) -> CascadeStep:
        return step(self._conn, continuation_ids, actor=actor)
