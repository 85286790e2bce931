"""Core metadata of ``cascade_continuations`` (migration 0008): what a bounded
cascade step cut off, until a later step continues it (council.ledger.cascade).
Re-exported by ``council.ledger.tables``, which would otherwise pass 500 lines."""

from __future__ import annotations

from sqlalchemy import Column, Index, Table, Text, text
from sqlalchemy.dialects.postgresql import JSONB

from council.ledger.table_helpers import TS, created, id_column, metadata

cascade_continuations = Table(
    "cascade_continuations",
    metadata,
    id_column(),
    Column("pending", JSONB, nullable=False),
    Column("actor", Text, nullable=False),
    created(clock=True),
    Column("continued_at", TS),
    Index(
        "cascade_continuations_unfinished_idx", "created_at", postgresql_where=text("continued_at IS NULL")
    ),
    comment="What a bounded reversal cascade step cut off: [[version_id, depth_left], ...], "
    "until a later step continues it",
)
