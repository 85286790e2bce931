"""Pending actions and their acceptance conditions. Named SQL: council/sql/action_store.sql."""

from __future__ import annotations

from council.domain import validate as v
from council.domain.commands import IdRef, NewAction
from council.domain.results.graph import Action, Closed
from council.errors import BadInput
from council.ledger.events import append
from council.ledger.lookup import InThread, StatusInThread, require, require_in_thread, require_row, resolve
from council.ledger.nodes import VersionRow
from council.ledger.pg import Connection, execute, fetch
from council.ledger.threads import main_branch_id


class Actions:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def add(self, action: NewAction, *, actor: str) -> Action:
        """A pending action on the version's branch (main when it names no version)."""
        conn = self._conn
        thread_id = resolve(conn, "threads", action.thread, "thread")
        require(conn, "threads", thread_id, "thread")
        branch_id = main_branch_id(conn, thread_id)
        version_id = None
        if action.version is not None:
            version_id = resolve(conn, "node_versions", action.version, "node version")
            branch_id = require_in_thread(
                conn, "node_versions", VersionRow, version_id, thread_id, "node version"
            )["branch_id"]
        run_id = None
        if action.run is not None:
            run_id = resolve(conn, "agent_runs", action.run, "run")
            require_in_thread(conn, "agent_runs", InThread, run_id, thread_id, "run")
        [added] = fetch(
            conn,
            "add_action",
            Action,
            thread_id=thread_id,
            branch_id=branch_id,
            node_version_id=version_id,
            description=action.description,
            acceptance_condition=action.acceptance_condition,
            run_id=run_id,
        )
        append(
            conn,
            "action.added",
            actor=actor,
            thread_id=thread_id,
            subject_id=added.id,
            payload={"node_version_id": str(version_id) if version_id else None},
        )
        return added

    def close(self, action: IdRef, *, status: str, reason: str, actor: str) -> Closed:
        """Record that the acceptance condition was met (satisfied) or the action dropped."""
        v.choice(status, "action status", ("satisfied", "cancelled"))
        reason = v.text(reason, "reason", v.MAX_REASON)
        conn = self._conn
        action_id = resolve(conn, "pending_actions", action, "pending action")
        row = require_row(conn, "pending_actions", StatusInThread, action_id, "pending action", lock=True)
        if row["status"] != "open":
            raise BadInput(f"pending action {action_id} is already {row['status']}")
        execute(conn, "close_action", action_id=action_id, status=status, reason=reason, actor=actor)
        append(
            conn,
            f"action.{status}",
            actor=actor,
            thread_id=row["thread_id"],
            subject_id=action_id,
            payload={"reason": reason},
        )
        return Closed(id=action_id, status=status)
