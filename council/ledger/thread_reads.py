"""Read models of one thread for dashboards and the live page: its graph, its
runs, and where its event log stands."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Engine, Table, func, select

from council.ledger import tables as t
from council.ledger.db import unit_of_work
from council.ledger.lookup import require

_RUN_COLUMNS = (
    "id",
    "thread_id",
    "dispatch_id",
    "parent_run_id",
    "agent",
    "model",
    "provider",
    "simulated",
    "round",
    "mode",
    "proposal_id",
    "status",
    "attempt",
    "request_sha256",
    "error",
    "created_at",
    "started_at",
    "finished_at",
)


def thread_graph(engine: Engine, thread_id: UUID) -> dict[str, Any]:
    """Logical nodes with every version (status, claim count), the edges between
    versions, the branches, and the consolidations and memory items of the thread."""
    with unit_of_work(engine) as conn:
        require(conn, t.threads, thread_id, "thread")
        return {
            "thread_id": thread_id,
            "nodes": _nodes(conn, thread_id),
            "edges": _of_thread(
                conn,
                t.edges,
                thread_id,
                ["id", "kind", "from_version_id", "to_version_id", "branch_id", "created_by_run_id"],
            ),
            "branches": _of_thread(
                conn,
                t.branches,
                thread_id,
                ["id", "kind", "label", "status", "parent_branch_id", "divergence_type"],
            ),
            "consolidations": _of_thread(
                conn,
                t.consolidations,
                thread_id,
                ["id", "logical_node_id", "node_version_id", "status", "created_at"],
            ),
            "memory": _of_thread(
                conn,
                t.memory_items,
                thread_id,
                [
                    "id",
                    "consolidation_id",
                    "logical_node_id",
                    "node_version_id",
                    "status",
                    "status_changed_at",
                ],
            ),
        }


def thread_runs(engine: Engine, thread_id: UUID) -> list[dict[str, Any]]:
    """Every run of the thread, by creation, with its operational state."""
    with unit_of_work(engine) as conn:
        require(conn, t.threads, thread_id, "thread")
        columns = [t.agent_runs.c[name] for name in _RUN_COLUMNS]
        return _rows(
            conn,
            select(*columns)
            .where(t.agent_runs.c.thread_id == thread_id)
            .order_by(t.agent_runs.c.created_at, t.agent_runs.c.round, t.agent_runs.c.agent),
        )


def latest_event_id(engine: Engine, thread_id: UUID) -> int:
    """The id of the thread's newest event (0 when it has none)."""
    with unit_of_work(engine) as conn:
        require(conn, t.threads, thread_id, "thread")
        newest = conn.execute(
            select(func.max(t.events.c.id)).where(t.events.c.thread_id == thread_id)
        ).scalar_one()
        return int(newest or 0)


def _nodes(conn: Connection, thread_id: UUID) -> list[dict[str, Any]]:
    claims = (
        select(t.claims.c.node_version_id, func.count().label("claims"))
        .group_by(t.claims.c.node_version_id)
        .subquery()
    )
    v = t.node_versions
    versions = _rows(
        conn,
        select(
            v.c.id.label("version_id"),
            v.c.logical_node_id,
            v.c.version_no,
            v.c.branch_id,
            v.c.parent_version_id,
            v.c.content,
            v.c.created_by_run_id,
            v.c.created_at,
            t.node_version_states.c.status,
            func.coalesce(claims.c.claims, 0).label("claims"),
        )
        .join(t.node_version_states, t.node_version_states.c.id == v.c.id)
        .outerjoin(claims, claims.c.node_version_id == v.c.id)
        .where(v.c.thread_id == thread_id)
        .order_by(v.c.created_at, v.c.logical_node_id, v.c.version_no),
    )
    heads = {
        row["id"]: row
        for row in _rows(
            conn,
            select(t.logical_nodes.c.id, t.logical_nodes.c.branch_id, t.logical_nodes.c.head_version_id)
            .where(t.logical_nodes.c.thread_id == thread_id)
            .order_by(t.logical_nodes.c.created_at, t.logical_nodes.c.id),
        )
    }
    nodes: dict[UUID, dict[str, Any]] = {
        node_id: {
            "logical_node_id": node_id,
            "branch_id": head["branch_id"],
            "head_version_id": head["head_version_id"],
            "versions": [],
        }
        for node_id, head in heads.items()
    }
    for version in versions:
        nodes[version["logical_node_id"]]["versions"].append(version)
    return list(nodes.values())


def _of_thread(conn: Connection, table: Table, thread_id: UUID, columns: list[str]) -> list[dict[str, Any]]:
    """The given columns of a table's rows of one thread, in creation order."""
    return _rows(
        conn,
        select(*(table.c[name] for name in columns))
        .where(table.c.thread_id == thread_id)
        .order_by(table.c.created_at, table.c.id),
    )


def _rows(conn: Connection, query: Any) -> list[dict[str, Any]]:
    return [dict(row) for row in conn.execute(query).mappings()]
