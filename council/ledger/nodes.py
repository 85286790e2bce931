"""Logical nodes and their immutable versions (invariant 3), with edges,
citations and status transitions. Named SQL: council/sql/node_store.sql."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TypedDict
from uuid import UUID

from council.domain import validate as v
from council.domain.canonical import sha256_text
from council.domain.commands import IdRef, NewNode, NewVersion
from council.domain.results.graph import StatusChanged, VersionCreated, VersionShown
from council.domain.vocabulary import MANUAL_NODE_MOVES
from council.errors import BadInput
from council.known_secrets import refuse_known_secret
from council.ledger.alternatives import Alternatives
from council.ledger.citations import check_cited, insert_citations, resolved
from council.ledger.events import append
from council.ledger.held_runs import HandRun, hold_by_hand
from council.ledger.locks import lock_node
from council.ledger.lookup import (
    InThread,
    StatusInThread,
    require,
    require_all_in_thread,
    require_in_thread,
    require_row,
    resolve,
)
from council.ledger.pg import Connection, Row, column, execute, fetch
from council.ledger.threads import main_branch_id


class VersionRow(TypedDict):
    """A row of ``node_versions``."""

    id: UUID
    logical_node_id: UUID
    thread_id: UUID
    branch_id: UUID
    version_no: int
    parent_version_id: UUID | None
    content: str
    content_sha256: str
    initial_status: str
    created_by_run_id: UUID | None
    created_at: datetime


class _LogicalNode(TypedDict):
    thread_id: UUID
    branch_id: UUID
    head_version_id: UUID
    head_version_no: int


class Nodes:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def add(self, node: NewNode, *, actor: str, held: bool = False) -> VersionCreated:
        """Create a logical node with its first version. A node made by a run is
        originated by it (an `originate` claim with its claim.added event, in the same
        transaction). By hand (``held`` false) the run must be one its recorder, ``actor``,
        holds open, as for any claim by hand (:func:`hold_by_hand`); ``held``: the caller
        holds the run (a worker's fenced output, an MCP session's submission)."""
        conn = self._conn
        thread_id = resolve(conn, "threads", node.thread, "thread")
        require(conn, "threads", thread_id, "thread")
        branch = _branch(conn, thread_id, node.branch)
        run_id = _run(conn, node.run, thread_id)
        edges = _resolved_edges(conn, node.edges, thread_id)
        _guard_rivals(conn, thread_id, edges)  # before any other lock
        cites = resolved(conn, node.cites)
        check_cited(conn, thread_id, [UUID(str(c.evidence)) for c in cites])
        if run_id is not None and not held:
            hold_by_hand(conn, require_row(conn, "agent_runs", HandRun, run_id, "run", lock=True), actor)
        [node_id] = column(conn, "add_logical_node", UUID, thread_id=thread_id, branch_id=branch["id"])
        version = _insert_version(
            conn, node_id, thread_id, branch["id"], 1, None, node.content, node.status, run_id
        )
        _check_rivals(conn, version, edges)
        edge_ids = _insert_edges(conn, version, edges, run_id)
        claim_id = None
        if run_id is not None:
            [claim_id] = column(
                conn,
                "add_originate_claim",
                UUID,
                run_id=run_id,
                node_version_id=version["id"],
                confidence=node.level,
            )
        citation_ids = insert_citations(conn, version=version, cites=cites, run_id=run_id, claim_id=claim_id)
        if claim_id is not None:
            payload = {
                "run_id": str(run_id),
                "node_version_id": str(version["id"]),
                "claim_type": "originate",
                "confidence": float(node.level),
                "citations": len(citation_ids),
            }
            append(
                conn, "claim.added", actor=actor, thread_id=thread_id, subject_id=claim_id, payload=payload
            )
        append(
            conn,
            "node.created",
            actor=actor,
            thread_id=thread_id,
            subject_id=version["id"],
            payload={
                "logical_node_id": str(node_id),
                "branch_id": str(branch["id"]),
                "status": node.status,
                "edges": len(edge_ids),
                "citations": len(citation_ids),
                "depends_on": [str(target) for kind, target in edges if kind == "depends_on"],
            },
        )
        return _created(version, node.status, edge_ids, citation_ids, claim_id)

    def add_version(self, new: NewVersion, *, actor: str, held: bool = False) -> VersionCreated:
        """A content change is a new version (never an edit); the head moves by trigger.
        A version that names its run is that run's output (its citations are what the run
        cited): by hand (``held`` false) only on a run its recorder holds open, as for a
        node (:meth:`add`); ``held``: the caller holds the run (a worker's fenced output, an
        MCP session's submission)."""
        conn = self._conn
        logical_node_id = resolve(conn, "logical_nodes", new.logical_node, "logical node")
        if any(kind == "contradicts" for kind, _ in new.edges):  # the alternatives key before the row lock
            Alternatives(conn).lock(
                require_row(conn, "logical_nodes", InThread, logical_node_id, "logical node")["thread_id"]
            )
        # Locking the logical node serialises version numbering.
        node = require_row(conn, "logical_nodes", _LogicalNode, logical_node_id, "logical node", lock=True)
        thread_id = node["thread_id"]
        run_id = _run(conn, new.run, thread_id)
        edges = _resolved_edges(conn, new.edges, thread_id)
        cites = resolved(conn, new.cites)
        check_cited(conn, thread_id, [UUID(str(c.evidence)) for c in cites])
        if run_id is not None and not held:
            hold_by_hand(conn, require_row(conn, "agent_runs", HandRun, run_id, "run", lock=True), actor)
        version = _insert_version(
            conn,
            logical_node_id,
            thread_id,
            node["branch_id"],
            node["head_version_no"] + 1,
            node["head_version_id"],
            new.content,
            new.status,
            run_id,
        )
        _check_rivals(conn, version, edges)
        edge_ids = _insert_edges(conn, version, edges, run_id)
        citation_ids = insert_citations(conn, version=version, cites=cites, run_id=run_id)
        append(
            conn,
            "node.versioned",
            actor=actor,
            thread_id=thread_id,
            subject_id=version["id"],
            payload={
                "logical_node_id": str(logical_node_id),
                "version_no": version["version_no"],
                "parent_version_id": str(node["head_version_id"]),
            },
        )
        return _created(version, new.status, edge_ids, citation_ids, None)

    def set_status(self, version: IdRef, *, status: str, reason: str, actor: str) -> StatusChanged:
        """Move a version between open, tentative and killed. `resolved` belongs to
        the committer alone (invariant 7)."""
        reason = v.text(reason, "reason", v.MAX_REASON)
        conn = self._conn
        version_id = resolve(conn, "node_versions", version, "node version")
        row = require_row(conn, "node_versions", VersionRow, version_id, "node version")
        # Status moves serialise with the committer on the node's lock.
        lock_node(conn, row["logical_node_id"])
        current = self.status_of(version_id)
        allowed = MANUAL_NODE_MOVES.get(current, ())
        if status not in allowed:
            raise BadInput(
                f"cannot move node version from {current} to {status}"
                + (f" (allowed: {', '.join(allowed)})" if allowed else "")
            )
        execute(
            conn,
            "add_status_transition",
            version_id=version_id,
            from_status=current,
            to_status=status,
            reason=reason,
            actor=actor,
        )
        append(
            conn,
            "node.status_changed",
            actor=actor,
            thread_id=row["thread_id"],
            subject_id=version_id,
            payload={"from": current, "to": status, "reason": reason},
        )
        return StatusChanged(version_id=version_id, from_status=current, status=status)

    def status_of(self, version_id: UUID) -> str:
        [status] = column(self._conn, "version_status", str, version_id=version_id)
        return status

    def get(self, version_id: UUID) -> VersionRow:
        """The version's row (NotFound for an unknown id)."""
        return require_row(self._conn, "node_versions", VersionRow, version_id, "node version")

    def show(self, version_id: UUID) -> VersionShown:
        """A version with its status, edges, claims, citations and status history."""
        conn = self._conn
        version: dict[str, object] = dict(self.get(version_id))
        version["version_id"] = version.pop("id")
        version["status"] = self.status_of(version_id)
        for key, name in (
            ("edges_out", "version_edges_out"),
            ("edges_in", "version_edges_in"),
            ("claims", "version_claims"),
            ("citations", "version_citations"),
            ("status_history", "version_status_history"),
        ):
            version[key] = fetch(conn, name, Row, version_id=version_id)
        return VersionShown.model_validate(version)


def _branch(conn: Connection, thread_id: UUID, branch: IdRef | None) -> StatusInThread:
    branch_id = (
        main_branch_id(conn, thread_id) if branch is None else resolve(conn, "branches", branch, "branch")
    )
    row = require_in_thread(conn, "branches", StatusInThread, branch_id, thread_id, "branch")
    if row["status"] != "active":
        raise BadInput(f"branch {branch_id} is {row['status']}; new nodes go on an active branch")
    return row


def _run(conn: Connection, run: IdRef | None, thread_id: UUID) -> UUID | None:
    if run is None:
        return None
    run_id = resolve(conn, "agent_runs", run, "run")
    require_in_thread(conn, "agent_runs", InThread, run_id, thread_id, "run")
    return run_id


def _resolved_edges(
    conn: Connection, edges: Sequence[tuple[str, IdRef]], thread_id: UUID
) -> list[tuple[str, UUID]]:
    found = [(kind, resolve(conn, "node_versions", target, "node version")) for kind, target in edges]
    require_all_in_thread(conn, "node_versions", [target for _, target in found], thread_id, "node version")
    return found


def _guard_rivals(conn: Connection, thread_id: UUID, edges: Sequence[tuple[str, UUID]]) -> None:
    """Before a version with contradicts edges is written: the thread's alternatives key
    (under exclusive_alternatives; taken before any row or node lock, as the committer
    takes it before its node locks). Taking it again later in the transaction is free."""
    if any(kind == "contradicts" for kind, _ in edges):
        Alternatives(conn).lock(thread_id)


def _check_rivals(conn: Connection, version: VersionRow, edges: Sequence[tuple[str, UUID]]) -> None:
    """A new version's contradicts edges, checked under the key (``Alternatives.check_edges``)."""
    ends = [(version["id"], target) for kind, target in edges if kind == "contradicts"]
    if ends:
        Alternatives(conn).check_edges(version["thread_id"], ends)


def _insert_version(
    conn: Connection,
    node_id: UUID,
    thread_id: UUID,
    branch_id: UUID,
    version_no: int,
    parent_version_id: UUID | None,
    content: str,
    status: str,
    run_id: UUID | None,
) -> VersionRow:
    refuse_known_secret(content, "the node's content")  # addressed by its content: never altered
    return fetch(
        conn,
        "add_node_version",
        VersionRow,
        logical_node_id=node_id,
        thread_id=thread_id,
        branch_id=branch_id,
        version_no=version_no,
        parent_version_id=parent_version_id,
        content=content,
        content_sha256=sha256_text(content),
        initial_status=status,
        run_id=run_id,
    )[0]


def _insert_edges(
    conn: Connection, version: VersionRow, edges: Sequence[tuple[str, UUID]], run_id: UUID | None
) -> list[UUID]:
    unique = list(dict.fromkeys(edges))
    if not unique:
        return []
    return column(
        conn,
        "add_edges",
        UUID,
        thread_id=version["thread_id"],
        branch_id=version["branch_id"],
        from_version_id=version["id"],
        run_id=run_id,
        edges=json.dumps([{"kind": kind, "to_version_id": str(target)} for kind, target in unique]),
    )


def _created(
    version: VersionRow, status: str, edge_ids: list[UUID], citation_ids: list[UUID], claim_id: UUID | None
) -> VersionCreated:
    return VersionCreated(
        logical_node_id=version["logical_node_id"],
        version_id=version["id"],
        version_no=version["version_no"],
        thread_id=version["thread_id"],
        branch_id=version["branch_id"],
        status=status,
        content_sha256=version["content_sha256"],
        edge_ids=edge_ids,
        citation_ids=citation_ids,
        originate_claim_id=claim_id,
    )
