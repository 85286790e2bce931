"""Core metadata of ``thread_review_settings`` (migration 0011): how a thread's
opened retraction proposals are reviewed, one appended row per change
(council.ledger.review). Re-exported by ``council.ledger.tables``."""

from __future__ import annotations

from sqlalchemy import Column, Index, Integer, Table, Text, text
from sqlalchemy.dialects.postgresql import ARRAY

from council.ledger.table_helpers import created, fk, id_column, metadata

thread_review_settings = Table(
    "thread_review_settings",
    metadata,
    id_column(),
    fk("thread_id", "threads.id"),
    Column("review", Text, nullable=False),
    Column("delay_s", Integer, nullable=False, server_default=text("0")),
    Column("reason", Text, nullable=False, server_default=text("''::text")),
    Column("actor", Text, nullable=False),
    created(clock=True),
    Column(
        "agents",
        ARRAY(Text),
        comment="The agent profiles that review the thread's proposals; "
        "NULL: the profiles that worked the thread",
    ),
    Index("thread_review_settings_thread_idx", "thread_id", "created_at"),
    comment="How a thread's opened retraction proposals are reviewed (auto, delayed, manual); "
    "the latest row is in force",
)
