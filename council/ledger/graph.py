"""A thread's graph as the live page and dashboards read it: nodes with every
version, edges, branches, consolidations and memory items."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Table, func, select

from council.domain.results.graph import ThreadGraph
from council.ledger import tables as t


class Graph:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def of_thread(self, thread_id: UUID) -> ThreadGraph:
        conn = self._conn
        return ThreadGraph.model_validate(
            {
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
        )


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
