"""Core metadata of the observation tables (migration 0024): imported debates, their
threads and turns, and resolutions. Re-exported by ``council.ledger.tables``; the schema
drift test compares it with the migrated database (every write runs named SQL)."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Float, ForeignKey, Index, Integer, Table, Text, UniqueConstraint, text
from sqlalchemy.dialects.postgresql import ARRAY, UUID

from council.ledger.table_helpers import created, fk, id_column, metadata

debate_imports = Table(
    "debate_imports",
    metadata,
    id_column(),
    Column("file_sha256", Text, nullable=False, unique=True),
    Column("format", Text, nullable=False),
    Column("file_name", Text, nullable=False),
    Column("records", Integer, nullable=False),
    Column("turns", Integer, nullable=False),
    Column("actor", Text, nullable=False),
    created(clock=True),
    comment="A recorded-debate file imported once (its SHA-256 is unique): which format, how many "
    "records and turns",
)

imported_threads = Table(
    "imported_threads",
    metadata,
    Column("thread_id", UUID(as_uuid=True), ForeignKey("threads.id"), primary_key=True),
    fk("import_id", "debate_imports.id"),
    Column("record_id", Text, nullable=False),
    Column("tags", ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")),
    Column("labelled", Boolean, nullable=False),
    UniqueConstraint("import_id", "record_id"),
    Index("imported_threads_tags_idx", "tags", postgresql_using="gin"),
    comment="The thread an imported record became, with the record's id and tags",
)

imported_turns = Table(
    "imported_turns",
    metadata,
    Column("run_id", UUID(as_uuid=True), ForeignKey("agent_runs.id"), primary_key=True),
    fk("import_id", "debate_imports.id"),
    Column("record_id", Text, nullable=False),
    Column("turn_index", Integer, nullable=False),
    Column("debate_round", Integer, nullable=False),
    Column("stated_confidence", Float),
    Column("saw_given", Boolean, nullable=False, server_default=text("false")),
    Column("turn_text", Text),
    UniqueConstraint("import_id", "record_id", "turn_index"),
    comment="The provenance of an imported run: the file (by its import), the record and the turn it was",
)

imported_propositions = Table(
    "imported_propositions",
    metadata,
    Column("node_version_id", UUID(as_uuid=True), ForeignKey("node_versions.id"), primary_key=True),
    fk("thread_id", "threads.id"),
    Column("key", Text, nullable=False),
    Column("ordinal", Integer, nullable=False),
    Column("label", Text, nullable=False),
    Column("body", Text, nullable=False),
    UniqueConstraint("thread_id", "key"),
    comment="The option (label, text) or free answer an imported node stands for, so a record exports "
    "as it came",
)

resolutions = Table(
    "resolutions",
    metadata,
    id_column(),
    fk("node_version_id", "node_versions.id"),
    fk("thread_id", "threads.id"),
    Column("outcome", Boolean, nullable=False),
    Column("source", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("actor", Text, nullable=False),
    created(clock=True),
    Index("resolutions_version_idx", "node_version_id", "created_at", "id"),
    Index("resolutions_thread_idx", "thread_id"),
    comment="An outside fact deciding a node version true or false; the latest of a version is in force",
)
