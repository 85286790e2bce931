"""Pending actions and their acceptance conditions."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Engine, insert

from council.domain import validate as v
from council.errors import BadInput
from council.ledger import events
from council.ledger import tables as t
from council.ledger.db import unit_of_work
from council.ledger.lookup import require, require_in_thread
from council.ledger.threads import main_branch_id


def add_action(
    engine: Engine,
    *,
    thread_id: UUID,
    description: str,
    acceptance_condition: str,
    actor: str,
    version_id: UUID | None = None,
    run_id: UUID | None = None,
) -> dict[str, Any]:
    with unit_of_work(engine) as conn:
        return add_action_in(
            conn,
            thread_id=thread_id,
            description=description,
            acceptance_condition=acceptance_condition,
            actor=actor,
            version_id=version_id,
            run_id=run_id,
        )


def add_action_in(
    conn: Connection,
    *,
    thread_id: UUID,
    description: str,
    acceptance_condition: str,
    actor: str,
    version_id: UUID | None = None,
    run_id: UUID | None = None,
) -> dict[str, Any]:
    """A pending action on the version's branch (main when it names no version)."""
    description = v.text(description, "description", v.MAX_CONTENT)
    acceptance_condition = v.text(acceptance_condition, "acceptance condition", v.MAX_CONTENT)
    require(conn, t.threads, thread_id, "thread")
    branch_id = main_branch_id(conn, thread_id)
    if version_id is not None:
        branch_id = require_in_thread(conn, t.node_versions, version_id, thread_id, "node version")[
            "branch_id"
        ]
    if run_id is not None:
        require_in_thread(conn, t.agent_runs, run_id, thread_id, "run")
    action = (
        conn.execute(
            insert(t.pending_actions)
            .values(
                thread_id=thread_id,
                branch_id=branch_id,
                node_version_id=version_id,
                description=description,
                acceptance_condition=acceptance_condition,
                created_by_run_id=run_id,
            )
            .returning(t.pending_actions)
        )
        .mappings()
        .one()
    )
    events.append(
        conn,
        "action.added",
        actor=actor,
        thread_id=thread_id,
        subject_id=action["id"],
        payload={"node_version_id": str(version_id) if version_id else None},
    )
    return dict(action)


def close_action(engine: Engine, *, action_id: UUID, status: str, reason: str, actor: str) -> dict[str, Any]:
    """Record that the acceptance condition was met (satisfied) or the action dropped."""
    v.choice(status, "action status", ("satisfied", "cancelled"))
    reason = v.text(reason, "reason", v.MAX_REASON)
    with unit_of_work(engine) as conn:
        action = require(conn, t.pending_actions, action_id, "pending action", lock=True)
        if action["status"] != "open":
            raise BadInput(f"pending action {action_id} is already {action['status']}")
        conn.execute(
            insert(t.pending_action_transitions).values(
                pending_action_id=action_id, from_status="open", to_status=status, reason=reason, actor=actor
            )
        )
        events.append(
            conn,
            f"action.{status}",
            actor=actor,
            thread_id=action["thread_id"],
            subject_id=action_id,
            payload={"reason": reason},
        )
        return {"id": action_id, "status": status}
