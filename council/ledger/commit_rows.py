"""Typed rows of the commit path's named queries that more than one store returns
(a row shape is defined once; a store's own shapes live in the store)."""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID


class AffectedConsolidation(TypedDict):
    """A live consolidation a validity change reaches, with its node's lock key
    (``affected_consolidations``, ``provisional_challenged``, ``unreassessed_consolidations``)."""

    id: UUID
    logical_node_id: UUID
    node_version_id: UUID
    thread_id: UUID
    node_lock_key: int
