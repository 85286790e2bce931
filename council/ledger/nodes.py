"""Logical nodes and their immutable versions (invariant 3), with edges,
citations and status transitions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Engine, insert, select

from council.domain import validate as v
from council.domain.canonical import sha256_text
from council.domain.vocabulary import EDGE_KINDS, MANUAL_NODE_MOVES, NEW_NODE_STATUSES
from council.errors import BadInput
from council.ledger import events
from council.ledger import tables as t
from council.ledger.citations import Cite, check_cited, checked, insert_citations, same_reading
from council.ledger.db import unit_of_work
from council.ledger.locks import lock_node
from council.ledger.lookup import require, require_all_in_thread, require_in_thread
from council.ledger.threads import main_branch_id


def add_node(
    engine: Engine,
    *,
    thread_id: UUID,
    content: str,
    actor: str,
    status: str = "open",
    branch_id: UUID | None = None,
    depends_on: Sequence[UUID] = (),
    edges: Sequence[tuple[str, UUID]] = (),
    cites: Sequence[UUID] = (),
    citation_role: str = "supports",
    interpretation: str = "",
    run_id: UUID | None = None,
) -> dict[str, Any]:
    with unit_of_work(engine) as conn:
        return add_node_in(
            conn,
            thread_id=thread_id,
            content=content,
            actor=actor,
            status=status,
            branch_id=branch_id,
            depends_on=depends_on,
            edges=edges,
            cites=same_reading(cites, citation_role, interpretation),
            run_id=run_id,
        )


def add_node_in(
    conn: Connection,
    *,
    thread_id: UUID,
    content: str,
    actor: str,
    status: str = "open",
    branch_id: UUID | None = None,
    depends_on: Sequence[UUID] = (),
    edges: Sequence[tuple[str, UUID]] = (),
    cites: Sequence[Cite] = (),
    run_id: UUID | None = None,
) -> dict[str, Any]:
    """Create a logical node with its first version. A node made by a run is
    originated by it (an `originate` claim in the same transaction)."""
    content = v.text(content, "content", v.MAX_CONTENT)
    v.choice(status, "status", NEW_NODE_STATUSES)
    cites = checked(cites, "supports")
    all_edges = [("depends_on", d) for d in depends_on] + list(edges)
    for kind, _ in all_edges:
        v.choice(kind, "edge kind", EDGE_KINDS)
    v.count(all_edges, "edges")
    require(conn, t.threads, thread_id, "thread")
    branch = _branch(conn, thread_id, branch_id)
    _check_run(conn, run_id, thread_id)
    require_all_in_thread(
        conn, t.node_versions, [target for _, target in all_edges], thread_id, "node version"
    )
    check_cited(conn, thread_id, [c.evidence_id for c in cites])
    node_id = conn.execute(
        insert(t.logical_nodes)
        .values(thread_id=thread_id, branch_id=branch["id"])
        .returning(t.logical_nodes.c.id)
    ).scalar_one()
    version = _insert_version(conn, node_id, thread_id, branch["id"], 1, None, content, status, run_id)
    edge_ids = _insert_edges(conn, version, all_edges, run_id)
    claim_id = None
    if run_id is not None:
        claim_id = conn.execute(
            insert(t.claims)
            .values(run_id=run_id, node_version_id=version["id"], claim_type="originate", confidence=1)
            .returning(t.claims.c.id)
        ).scalar_one()
    citation_ids = insert_citations(conn, version=version, cites=cites, run_id=run_id, claim_id=claim_id)
    events.append(
        conn,
        "node.created",
        actor=actor,
        thread_id=thread_id,
        subject_id=version["id"],
        payload={
            "logical_node_id": str(node_id),
            "branch_id": str(branch["id"]),
            "status": status,
            "edges": len(edge_ids),
            "citations": len(citation_ids),
            "depends_on": [str(target) for kind, target in all_edges if kind == "depends_on"],
        },
    )
    return _version_result(version, status, edge_ids, citation_ids, claim_id)


def add_version(
    engine: Engine,
    *,
    logical_node_id: UUID,
    content: str,
    actor: str,
    status: str = "open",
    edges: Sequence[tuple[str, UUID]] = (),
    cites: Sequence[UUID] = (),
    citation_role: str = "supports",
    interpretation: str = "",
    run_id: UUID | None = None,
) -> dict[str, Any]:
    with unit_of_work(engine) as conn:
        return add_version_in(
            conn,
            logical_node_id=logical_node_id,
            content=content,
            actor=actor,
            status=status,
            edges=edges,
            cites=same_reading(cites, citation_role, interpretation),
            run_id=run_id,
        )


def add_version_in(
    conn: Connection,
    *,
    logical_node_id: UUID,
    content: str,
    actor: str,
    status: str = "open",
    edges: Sequence[tuple[str, UUID]] = (),
    cites: Sequence[Cite] = (),
    run_id: UUID | None = None,
) -> dict[str, Any]:
    """A content change is a new version (never an edit); the head moves by trigger."""
    content = v.text(content, "content", v.MAX_CONTENT)
    v.choice(status, "status", NEW_NODE_STATUSES)
    cites = checked(cites, "supports")
    for kind, _ in edges:
        v.choice(kind, "edge kind", EDGE_KINDS)
    # Locking the logical node serialises version numbering.
    node = require(conn, t.logical_nodes, logical_node_id, "logical node", lock=True)
    thread_id = node["thread_id"]
    _check_run(conn, run_id, thread_id)
    require_all_in_thread(conn, t.node_versions, [target for _, target in edges], thread_id, "node version")
    check_cited(conn, thread_id, [c.evidence_id for c in cites])
    version = _insert_version(
        conn,
        logical_node_id,
        thread_id,
        node["branch_id"],
        int(node["head_version_no"]) + 1,
        node["head_version_id"],
        content,
        status,
        run_id,
    )
    edge_ids = _insert_edges(conn, version, list(edges), run_id)
    citation_ids = insert_citations(conn, version=version, cites=cites, run_id=run_id)
    events.append(
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
    return _version_result(version, status, edge_ids, citation_ids, None)


def set_status(engine: Engine, *, version_id: UUID, status: str, reason: str, actor: str) -> dict[str, Any]:
    """Move a version between open, tentative and killed. `resolved` belongs to
    the committer alone (invariant 7)."""
    reason = v.text(reason, "reason", v.MAX_REASON)
    with unit_of_work(engine) as conn:
        version = require(conn, t.node_versions, version_id, "node version")
        # Status moves serialise with the committer on the node's lock.
        lock_node(conn, version["logical_node_id"])
        current = conn.execute(
            select(t.node_version_states.c.status).where(t.node_version_states.c.id == version_id)
        ).scalar_one()
        allowed = MANUAL_NODE_MOVES.get(current, ())
        if status not in allowed:
            raise BadInput(
                f"cannot move node version from {current} to {status}"
                + (f" (allowed: {', '.join(allowed)})" if allowed else "")
            )
        conn.execute(
            insert(t.node_status_transitions).values(
                node_version_id=version_id, from_status=current, to_status=status, reason=reason, actor=actor
            )
        )
        events.append(
            conn,
            "node.status_changed",
            actor=actor,
            thread_id=version["thread_id"],
            subject_id=version_id,
            payload={"from": current, "to": status, "reason": reason},
        )
        return {"version_id": version_id, "from_status": current, "status": status}


def show_version(engine: Engine, version_id: UUID) -> dict[str, Any]:
    with unit_of_work(engine) as conn:
        version = dict(require(conn, t.node_versions, version_id, "node version"))
        version["version_id"] = version.pop("id")
        version["status"] = conn.execute(
            select(t.node_version_states.c.status).where(t.node_version_states.c.id == version_id)
        ).scalar_one()
        for key, table, column in (
            ("edges_out", t.edges, t.edges.c.from_version_id),
            ("edges_in", t.edges, t.edges.c.to_version_id),
            ("claims", t.claims, t.claims.c.node_version_id),
            ("citations", t.citations, t.citations.c.node_version_id),
            ("status_history", t.node_status_transitions, t.node_status_transitions.c.node_version_id),
        ):
            query = select(table).where(column == version_id).order_by(table.c.created_at)
            version[key] = [dict(r) for r in conn.execute(query).mappings()]
        return version


def _branch(conn: Connection, thread_id: UUID, branch_id: UUID | None) -> Any:
    if branch_id is None:
        branch_id = main_branch_id(conn, thread_id)
    branch = require_in_thread(conn, t.branches, branch_id, thread_id, "branch")
    if branch["status"] != "active":
        raise BadInput(f"branch {branch_id} is {branch['status']}; new nodes go on an active branch")
    return branch


def _check_run(conn: Connection, run_id: UUID | None, thread_id: UUID) -> None:
    if run_id is not None:
        require_in_thread(conn, t.agent_runs, run_id, thread_id, "run")


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
) -> Any:
    return (
        conn.execute(
            insert(t.node_versions)
            .values(
                logical_node_id=node_id,
                thread_id=thread_id,
                branch_id=branch_id,
                version_no=version_no,
                parent_version_id=parent_version_id,
                content=content,
                content_sha256=sha256_text(content),
                initial_status=status,
                created_by_run_id=run_id,
            )
            .returning(t.node_versions)
        )
        .mappings()
        .one()
    )


def _insert_edges(
    conn: Connection, version: Any, edges: Sequence[tuple[str, UUID]], run_id: UUID | None
) -> list[UUID]:
    unique = list(dict.fromkeys(edges))
    if not unique:
        return []
    rows = [
        {
            "thread_id": version["thread_id"],
            "branch_id": version["branch_id"],
            "kind": kind,
            "from_version_id": version["id"],
            "to_version_id": target,
            "created_by_run_id": run_id,
        }
        for kind, target in unique
    ]
    return [r[0] for r in conn.execute(insert(t.edges).returning(t.edges.c.id), rows)]


def _version_result(
    version: Any, status: str, edge_ids: list[UUID], citation_ids: list[UUID], claim_id: UUID | None
) -> dict[str, Any]:
    return {
        "logical_node_id": version["logical_node_id"],
        "version_id": version["id"],
        "version_no": version["version_no"],
        "thread_id": version["thread_id"],
        "branch_id": version["branch_id"],
        "status": status,
        "content_sha256": version["content_sha256"],
        "edge_ids": edge_ids,
        "citation_ids": citation_ids,
        "originate_claim_id": claim_id,
    }
