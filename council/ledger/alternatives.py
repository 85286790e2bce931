"""Alternative sets (docs/architecture.md §4, revision 0040): the options of a question
recorded as one set, the guard a write of a contradicts edge takes, and the sets of a
thread as readers see them. Named SQL: council/sql/alternatives.sql.

A set is never stored whole: it is the component of contradicts edges and option sets,
derived when read (``council_alternative_set_v1`` in SQL, ``components`` in the domain).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from council.domain.alternatives import components, joined_live
from council.domain.results.graph import AlternativeMember, AlternativeSet
from council.errors import BadInput
from council.ledger.pg import Connection, column, fetch


@dataclass(frozen=True)
class _EdgeEnd:
    version_id: UUID
    logical_node_id: UUID
    set_name: str
    live: list[UUID]


@dataclass(frozen=True)
class Link:
    """What joins two vertices into one set (``alternative_links``): a contradicts edge
    between nodes ``a`` and ``b``, or option ``a`` of option set ``b`` with its label."""

    thread_id: str
    a: str
    b: str
    label: str | None
    ordinal: int | None


@dataclass(frozen=True)
class LinkedVersion:
    thread_id: str
    version_id: str
    logical_node_id: str


class Alternatives:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def add_options(
        self, thread_id: UUID, members: Sequence[tuple[UUID, str | None]], *, origin: str, actor: str
    ) -> UUID:
        """Record logical nodes (with their labels, in order) as the options of one question."""
        [set_id] = column(self._conn, "add_option_set", UUID, thread_id=thread_id, origin=origin, actor=actor)
        rows = [
            {"logical_node_id": str(n), "label": label, "ordinal": i} for i, (n, label) in enumerate(members)
        ]
        column(
            self._conn,
            "add_option_members",
            object,
            option_set_id=set_id,
            thread_id=thread_id,
            members=json.dumps(rows),
        )
        return set_id

    def lock(self, thread_id: UUID) -> bool:
        """Under a rule set with exclusive_alternatives, take the thread's alternatives key
        (held to the end of the transaction, as every committer deciding a version of the
        thread holds it; take it before any row or node lock); whether the thread is so."""
        found = column(self._conn, "alternatives_guard", bool, thread_id=thread_id)
        return bool(found and found[0])

    def check_edges(self, thread_id: UUID, ends: Sequence[tuple[UUID, UUID]]) -> None:
        """Before contradicts edges (from, to version) are written on ``thread_id``: refuse
        an edge between versions of one logical node and, under exclusive_alternatives
        (with the thread's key held), edges that would put two live consolidations in one
        set (invariant 8: retract one first)."""
        if not ends:
            return
        exclusive = self.lock(thread_id)
        versions = sorted({v for pair in ends for v in pair})
        found = {
            row.version_id: row for row in fetch(self._conn, "edge_sets", _EdgeEnd, version_ids=versions)
        }
        for a, b in ends:
            if found[a].logical_node_id == found[b].logical_node_id:
                raise BadInput(
                    f"node versions {a} and {b} are versions of one node; it cannot contradict itself"
                )
        if not exclusive:
            return
        sets = {
            str(e.logical_node_id): (e.set_name, frozenset(str(n) for n in e.live)) for e in found.values()
        }
        pairs = [(str(found[a].logical_node_id), str(found[b].logical_node_id)) for a, b in ends]
        both = joined_live(pairs, sets)
        if both:
            raise BadInput(
                "a contradicts edge would join alternatives that each hold a live consolidation "
                f"(logical nodes {', '.join(both)}); at most one per set may be live: retract one first"
            )

    def rival_heads(self, version_ids: Sequence[UUID]) -> list[UUID]:
        """The heads of the other alternatives of ``version_ids``' sets, under
        exclusive_alternatives: their decisions change with these versions' (evaluated next)."""
        if not version_ids:
            return []
        return column(self._conn, "rival_heads", UUID, version_ids=list(dict.fromkeys(version_ids)))

    def links(self, thread_ids: Sequence[UUID]) -> list[Link]:
        return fetch(self._conn, "alternative_links", Link, thread_ids=list(thread_ids))

    def linked_versions(self, thread_ids: Sequence[UUID]) -> list[LinkedVersion]:
        return fetch(self._conn, "alternative_versions", LinkedVersion, thread_ids=list(thread_ids))

    def of_thread(self, thread_id: UUID) -> list[AlternativeSet]:
        """The thread's alternative sets, each with its members' option labels."""
        found = self.links([thread_id])
        labels = {link.a: link.label for link in found if link.ordinal is not None}
        nodes = {link.a for link in found} | {link.b for link in found if link.ordinal is None}
        return [
            AlternativeSet(
                members=[
                    AlternativeMember(logical_node_id=UUID(n), label=labels.get(n)) for n in sorted(group)
                ]
            )
            for group in components(((link.a, link.b) for link in found), nodes)
        ]
