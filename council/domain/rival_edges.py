"""An agent's ``contradicts`` edges that name no version of its thread are left out, not
refused (docs/architecture.md §7). Pure.

A ``contradicts`` edge is an agent's judgement that two propositions exclude each other; it
adds no claim and no content. One whose end is an unknown id, or a version of another
thread, would otherwise fail the whole output — its claims and nodes with it — or cost a
re-prompt the answer does not need. So such an edge is dropped before the output check,
with a one-line reason per edge (recorded with the output's application, in the
``run.output_applied`` event's ``edges_dropped``); the rest of the output is checked and
written as usual. Every other problem of an edge (any other kind, a ``ref:`` of no new
node, an edge to itself or within one node) is refused as before, and re-prompted.
"""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from council.domain.agent_output import AgentOutput, EdgeOut
from council.domain.output_check import REF, VersionFacts

CONTRADICTS = "contradicts"


def without_bad_rivals(
    output: AgentOutput, versions: Mapping[UUID, VersionFacts], thread_id: UUID
) -> tuple[AgentOutput, list[str]]:
    """``output`` without its contradicts edges to an end that is no version of
    ``thread_id`` (``versions``: the rows read for the output's version ids), and why each
    was left out, by its place in the output."""
    dropped: list[str] = []

    def stray(value: str) -> str | None:
        """Why ``value`` names no version of the thread (None: it does, or it is a ref:)."""
        if value.startswith(REF):
            return None
        try:
            found = versions.get(UUID(value))
        except ValueError:
            return f"{value[:40]!r} is no node version id"
        if found is None:
            return f"no node version with id {value}"
        if found.thread_id != thread_id:
            return f"node version {value} belongs to another thread"
        return None

    def kept(edges: tuple[EdgeOut, ...] | list[EdgeOut], where: str) -> list[EdgeOut]:
        out = []
        for j, edge in enumerate(edges):
            reason = stray(edge.to) if edge.kind == CONTRADICTS else None
            if reason is None:
                out.append(edge)
            else:
                dropped.append(f"{where}.edges[{j}]: contradicts edge left out: {reason}")
        return out

    nodes = [
        n.model_copy(update={"edges": kept(n.edges, f"new_nodes[{i}]")})
        for i, n in enumerate(output.new_nodes)
    ]
    revised = [
        v.model_copy(update={"edges": kept(v.edges, f"new_versions[{i}]")})
        for i, v in enumerate(output.new_versions)
    ]
    between = []
    for i, edge in enumerate(output.edges):
        reason = None
        if edge.kind == CONTRADICTS:
            reason = stray(edge.node_version_id) or stray(edge.to)
        if reason is None:
            between.append(edge)
        else:
            dropped.append(f"edges[{i}]: contradicts edge left out: {reason}")
    if not dropped:
        return output, []
    return output.model_copy(update={"new_nodes": nodes, "new_versions": revised, "edges": between}), dropped
