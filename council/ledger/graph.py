"""A thread's graph as the live page and dashboards read it: nodes with every
version, edges, branches, consolidations and memory items.
Named SQL: council/sql/thread_store.sql."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from council.domain.results.graph import ThreadGraph
from council.ledger.alternatives import Alternatives
from council.ledger.pg import Connection, Row, fetch


class Graph:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def of_thread(self, thread_id: UUID) -> ThreadGraph:
        conn = self._conn
        return ThreadGraph.model_validate(
            {
                "thread_id": thread_id,
                "nodes": _nodes(conn, thread_id),
                "edges": _of_thread(conn, "graph_edges", thread_id),
                "branches": _of_thread(conn, "graph_branches", thread_id),
                "consolidations": _of_thread(conn, "graph_consolidations", thread_id),
                "memory": _of_thread(conn, "graph_memory", thread_id),
                "alternative_sets": Alternatives(conn).of_thread(thread_id),
            }
        )


def _nodes(conn: Connection, thread_id: UUID) -> list[dict[str, Any]]:
    versions = _of_thread(conn, "graph_versions", thread_id)
    heads = {row["id"]: row for row in _of_thread(conn, "graph_heads", thread_id)}
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


def _of_thread(conn: Connection, name: str, thread_id: UUID) -> list[dict[str, Any]]:
    """The rows of one thread the named query reads, in creation order."""
    return fetch(conn, name, Row, thread_id=thread_id)
