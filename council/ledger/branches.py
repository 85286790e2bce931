"""Branches: objective-level and node-level forks, explicit merges, kills.

Disagreement creates branches, never overwrites (invariant 4); a merge is an
explicit, recorded choice (the only thing that may be called "preferred").
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Engine, insert, select

from council.domain import validate as v
from council.domain.vocabulary import DIVERGENCE_TYPES
from council.errors import BadInput
from council.ledger import events
from council.ledger import tables as t
from council.ledger.db import unit_of_work
from council.ledger.lookup import require, require_in_thread, require_same_thread
from council.ledger.threads import main_branch_id


def fork(
    engine: Engine,
    *,
    thread_id: UUID,
    kind: str,
    label: str,
    divergence_type: str,
    actor: str,
    objective: str | None = None,
    parent_branch_id: UUID | None = None,
    fork_version_id: UUID | None = None,
    run_id: UUID | None = None,
) -> dict[str, Any]:
    with unit_of_work(engine) as conn:
        return fork_in(
            conn,
            thread_id=thread_id,
            kind=kind,
            label=label,
            divergence_type=divergence_type,
            actor=actor,
            objective=objective,
            parent_branch_id=parent_branch_id,
            fork_version_id=fork_version_id,
            run_id=run_id,
        )


def fork_in(
    conn: Connection,
    *,
    thread_id: UUID,
    kind: str,
    label: str,
    divergence_type: str,
    actor: str,
    objective: str | None = None,
    parent_branch_id: UUID | None = None,
    fork_version_id: UUID | None = None,
    run_id: UUID | None = None,
) -> dict[str, Any]:
    """An objective-level or node-level fork off an active branch (main by default)."""
    v.choice(kind, "branch kind", ("objective", "node"))
    v.choice(divergence_type, "divergence type", DIVERGENCE_TYPES)
    label = v.text(label, "label", v.MAX_TITLE)
    if kind == "objective":
        objective = v.text(objective, "objective", v.MAX_OBJECTIVE)
    elif objective:
        raise BadInput("--objective belongs to objective forks only")
    if kind == "node" and fork_version_id is None:
        raise BadInput("a node fork needs the version it diverges at (--at VERSION_ID)")
    require(conn, t.threads, thread_id, "thread")
    parent_id = parent_branch_id or main_branch_id(conn, thread_id)
    parent = require_in_thread(conn, t.branches, parent_id, thread_id, "branch")
    if parent["status"] != "active":
        raise BadInput(f"branch {parent_id} is {parent['status']}; fork from an active branch")
    if fork_version_id is not None:
        require_in_thread(conn, t.node_versions, fork_version_id, thread_id, "node version")
    if run_id is not None:
        require_in_thread(conn, t.agent_runs, run_id, thread_id, "run")
    branch = (
        conn.execute(
            insert(t.branches)
            .values(
                thread_id=thread_id,
                kind=kind,
                parent_branch_id=parent_id,
                fork_version_id=fork_version_id,
                divergence_type=divergence_type,
                objective=objective,
                label=label,
                created_by_run_id=run_id,
            )
            .returning(t.branches)
        )
        .mappings()
        .one()
    )
    events.append(
        conn,
        "branch.forked",
        actor=actor,
        thread_id=thread_id,
        subject_id=branch["id"],
        payload={"kind": kind, "divergence_type": divergence_type, "parent_branch_id": str(parent_id)},
    )
    return dict(branch)


def merge(
    engine: Engine,
    *,
    source_branch_id: UUID,
    rationale: str,
    actor: str,
    target_branch_id: UUID | None = None,
    preferred_version_id: UUID | None = None,
) -> dict[str, Any]:
    rationale = v.text(rationale, "rationale", v.MAX_RATIONALE)
    with unit_of_work(engine) as conn:
        source = require(conn, t.branches, source_branch_id, "branch", lock=True)
        if source["kind"] == "main":
            raise BadInput("the main branch cannot be merged into another branch")
        if source["status"] != "active":
            raise BadInput(f"branch {source_branch_id} is {source['status']}, not active")
        target_id = target_branch_id or source["parent_branch_id"]
        target = require(conn, t.branches, target_id, "branch")
        require_same_thread(target, source["thread_id"], "branch")
        if target_id == source_branch_id:
            raise BadInput("a branch cannot be merged into itself")
        if preferred_version_id is not None:
            version = require(conn, t.node_versions, preferred_version_id, "node version")
            if version["branch_id"] not in (source_branch_id, target_id):
                raise BadInput("the preferred version must lie on the source or target branch")
        row = (
            conn.execute(
                insert(t.merges)
                .values(
                    thread_id=source["thread_id"],
                    source_branch_id=source_branch_id,
                    target_branch_id=target_id,
                    preferred_version_id=preferred_version_id,
                    rationale=rationale,
                    actor=actor,
                )
                .returning(t.merges)
            )
            .mappings()
            .one()
        )
        _transition(conn, source_branch_id, "active", "merged", f"merged into {target_id}", actor)
        events.append(
            conn,
            "branch.merged",
            actor=actor,
            thread_id=source["thread_id"],
            subject_id=source_branch_id,
            payload={"target_branch_id": str(target_id), "merge_id": str(row["id"])},
        )
        return dict(row)


def close(engine: Engine, *, branch_id: UUID, status: str, reason: str, actor: str) -> dict[str, Any]:
    """Kill (resolved-negative) or abandon a branch."""
    v.choice(status, "branch status", ("killed", "abandoned"))
    reason = v.text(reason, "reason", v.MAX_REASON)
    with unit_of_work(engine) as conn:
        branch = require(conn, t.branches, branch_id, "branch", lock=True)
        if branch["kind"] == "main":
            raise BadInput("the main branch cannot be closed")
        if branch["status"] != "active":
            raise BadInput(f"branch {branch_id} is {branch['status']}, not active")
        _transition(conn, branch_id, "active", status, reason, actor)
        events.append(
            conn,
            f"branch.{status}",
            actor=actor,
            thread_id=branch["thread_id"],
            subject_id=branch_id,
            payload={"reason": reason},
        )
        return {"id": branch_id, "status": status}


def list_branches(engine: Engine, thread_id: UUID) -> list[dict[str, Any]]:
    with unit_of_work(engine) as conn:
        require(conn, t.threads, thread_id, "thread")
        rows = conn.execute(
            select(t.branches).where(t.branches.c.thread_id == thread_id).order_by(t.branches.c.created_at)
        ).mappings()
        return [dict(r) for r in rows]


def _transition(conn: Any, branch_id: UUID, old: str, new: str, reason: str, actor: str) -> None:
    conn.execute(
        insert(t.branch_transitions).values(
            branch_id=branch_id, from_status=old, to_status=new, reason=reason, actor=actor
        )
    )
