"""Branches: objective-level and node-level forks, explicit merges, kills.

Disagreement creates branches, never overwrites (invariant 4); a merge is an
explicit, recorded choice (the only thing that may be called "preferred").
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from council.domain import validate as v
from council.domain.commands import IdRef, NewFork
from council.domain.results.graph import Branch, Closed, Merge
from council.errors import BadInput
from council.ledger.events import append
from council.ledger.lookup import (
    InThread,
    StatusInThread,
    require,
    require_in_thread,
    require_row,
    resolve,
)
from council.ledger.nodes import VersionRow
from council.ledger.pg import execute, fetch
from council.ledger.threads import main_branch_id

if TYPE_CHECKING:  # events.append and the lookups take it until they run on psycopg alone
    from council.ledger.pg import Connection


class _BranchRow(StatusInThread):
    kind: str
    parent_branch_id: UUID | None


class Branches:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def fork(self, fork: NewFork, *, actor: str) -> Branch:
        """An objective-level or node-level fork off an active branch (main by default)."""
        conn = self._conn
        thread_id = resolve(conn, "threads", fork.thread, "thread")
        require(conn, "threads", thread_id, "thread")
        parent_id = (
            resolve(conn, "branches", fork.parent_branch, "branch")
            if fork.parent_branch is not None
            else main_branch_id(conn, thread_id)
        )
        parent = require_in_thread(conn, "branches", StatusInThread, parent_id, thread_id, "branch")
        if parent["status"] != "active":
            raise BadInput(f"branch {parent_id} is {parent['status']}; fork from an active branch")
        at_version = None
        if fork.at_version is not None:
            at_version = resolve(conn, "node_versions", fork.at_version, "node version")
            require_in_thread(conn, "node_versions", InThread, at_version, thread_id, "node version")
        run_id = None
        if fork.run is not None:
            run_id = resolve(conn, "agent_runs", fork.run, "run")
            require_in_thread(conn, "agent_runs", InThread, run_id, thread_id, "run")
        branch = fetch(
            conn,
            "add_branch",
            Branch,
            thread_id=thread_id,
            kind=fork.kind,
            parent_branch_id=parent_id,
            fork_version_id=at_version,
            divergence_type=fork.divergence_type,
            objective=fork.objective,
            label=fork.label,
            created_by_run_id=run_id,
        )[0]
        append(
            conn,
            "branch.forked",
            actor=actor,
            thread_id=thread_id,
            subject_id=branch.id,
            payload={
                "kind": fork.kind,
                "divergence_type": fork.divergence_type,
                "parent_branch_id": str(parent_id),
            },
        )
        return branch

    def merge(
        self,
        source: IdRef,
        *,
        rationale: str,
        actor: str,
        target: IdRef | None = None,
        preferred_version: IdRef | None = None,
    ) -> Merge:
        """An explicit merge into the parent branch (or ``target``), optionally
        naming the version preferred."""
        rationale = v.text(rationale, "rationale", v.MAX_RATIONALE)
        conn = self._conn
        source_id = resolve(conn, "branches", source, "branch")
        row = require_row(conn, "branches", _BranchRow, source_id, "branch", lock=True)
        if row["kind"] == "main":
            raise BadInput("the main branch cannot be merged into another branch")
        if row["status"] != "active":
            raise BadInput(f"branch {source_id} is {row['status']}, not active")
        target_id = (
            resolve(conn, "branches", target, "branch") if target is not None else row["parent_branch_id"]
        )
        if target_id is None:  # only main has no parent, refused above
            raise BadInput(f"branch {source_id} has no parent branch to merge into")
        require_in_thread(conn, "branches", InThread, target_id, row["thread_id"], "branch")
        if target_id == source_id:
            raise BadInput("a branch cannot be merged into itself")
        preferred_id = None
        if preferred_version is not None:
            preferred_id = resolve(conn, "node_versions", preferred_version, "node version")
            version = require_row(conn, "node_versions", VersionRow, preferred_id, "node version")
            if version["branch_id"] not in (source_id, target_id):
                raise BadInput("the preferred version must lie on the source or target branch")
        merged = fetch(
            conn,
            "add_merge",
            Merge,
            thread_id=row["thread_id"],
            source_branch_id=source_id,
            target_branch_id=target_id,
            preferred_version_id=preferred_id,
            rationale=rationale,
            actor=actor,
        )[0]
        _transition(conn, source_id, "active", "merged", f"merged into {target_id}", actor)
        append(
            conn,
            "branch.merged",
            actor=actor,
            thread_id=row["thread_id"],
            subject_id=source_id,
            payload={"target_branch_id": str(target_id), "merge_id": str(merged.id)},
        )
        return merged

    def close(self, branch: IdRef, *, status: str, reason: str, actor: str) -> Closed:
        """Kill (resolved-negative) or abandon a branch."""
        v.choice(status, "branch status", ("killed", "abandoned"))
        reason = v.text(reason, "reason", v.MAX_REASON)
        conn = self._conn
        branch_id = resolve(conn, "branches", branch, "branch")
        row = require_row(conn, "branches", _BranchRow, branch_id, "branch", lock=True)
        if row["kind"] == "main":
            raise BadInput("the main branch cannot be closed")
        if row["status"] != "active":
            raise BadInput(f"branch {branch_id} is {row['status']}, not active")
        _transition(conn, branch_id, "active", status, reason, actor)
        append(
            conn,
            f"branch.{status}",
            actor=actor,
            thread_id=row["thread_id"],
            subject_id=branch_id,
            payload={"reason": reason},
        )
        return Closed(id=branch_id, status=status)

    def of_thread(self, thread_id: UUID) -> list[Branch]:
        return fetch(self._conn, "thread_branches", Branch, thread_id=thread_id)


def _transition(conn: Connection, branch_id: UUID, old: str, new: str, reason: str, actor: str) -> None:
    execute(
        conn,
        "add_branch_transition",
        branch_id=branch_id,
        from_status=old,
        to_status=new,
        reason=reason,
        actor=actor,
    )
