"""Memory item status: every change is an appended transition and an event."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, insert

from council.ledger import events
from council.ledger import tables as t


def move_memory(
    conn: Connection, memory: dict[str, Any], to: str, reason: str, actor: str, details: dict[str, Any]
) -> str:
    """Append a memory transition (the trigger applies it) and its event."""
    conn.execute(
        insert(t.memory_transitions).values(
            memory_item_id=memory["id"],
            from_status=memory["status"],
            to_status=to,
            reason=reason,
            actor=actor,
            details=details,
        )
    )
    events.append(
        conn,
        f"memory.{to}",
        actor=actor,
        thread_id=memory.get("thread_id"),
        subject_id=memory["id"],
        payload={"from": memory["status"], "reason": reason},
    )
    memory["status"] = to
    return to
