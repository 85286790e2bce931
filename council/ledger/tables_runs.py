"""Core metadata of a run's records (migrations 0006, 0009 and 0026): who ran each
attempt, what an agent-CLI call did and opened, and every answer kept. Only the schema
drift test and test fixtures read it; the stores run named SQL (council/sql/run_records.sql).
"""

from __future__ import annotations

from sqlalchemy import Boolean, Column, ForeignKey, Index, Integer, Table, Text, UniqueConstraint
from sqlalchemy.dialects.postgresql import JSONB

from council.ledger.table_helpers import created, fk, id_column, metadata

run_attempts = Table(
    "run_attempts",
    metadata,
    id_column(),
    fk("run_id", "agent_runs.id"),
    Column("attempt", Integer, nullable=False),
    Column("event", Text, nullable=False),  # claimed | ended
    Column("worker", Text, nullable=False),  # Celery node name and pid, else host:pid
    Column("status", Text),  # of an ended row: succeeded | failed | released | lease_expired
    Column("reason", Text),
    created(clock=True),
    UniqueConstraint("run_id", "attempt", "event"),
)


run_traces = Table(
    "run_traces",
    metadata,
    id_column(),
    fk("run_id", "agent_runs.id"),
    Column("attempt", Integer, nullable=False),
    Column("call", Integer, nullable=False),  # 1, or 2 for the re-prompt
    Column("runtime", Text, nullable=False),
    Column("cli_version", Text, nullable=False),
    Column("exit_status", Integer),
    Column("stopped", Text),  # deadline | turn limit | authentication refused
    Column("trace", JSONB, nullable=False),
    created(clock=True),
    UniqueConstraint("run_id", "attempt", "call"),
    comment="One agent-CLI call of a run attempt (2 = the re-prompt): its bounded event stream "
    "and what was read from it",
)


run_opened_evidence = Table(
    "run_opened_evidence",
    metadata,
    id_column(),
    fk("run_id", "agent_runs.id"),
    Column("attempt", Integer, nullable=False),
    fk("evidence_id", "evidence.id"),
    Column("file", Text, nullable=False),
    Column("tool", Text, nullable=False),
    created(clock=True),
    UniqueConstraint("run_id", "attempt", "evidence_id"),
    Index("run_opened_evidence_evidence_idx", "evidence_id"),
    comment="An evidence file an agent-CLI run opened with its own tool, as its trace shows",
)


answer_texts = Table(
    "answer_texts",
    metadata,
    Column("sha256", Text, primary_key=True),
    Column("body", Text, nullable=False),
    Column("byte_length", Integer, nullable=False),
    Column("truncated", Boolean, nullable=False),
    created(clock=True),
    comment="A text a model or agent CLI returned, once per SHA-256 of its full text; body is cut "
    "at the bound when truncated",
)


run_answers = Table(
    "run_answers",
    metadata,
    id_column(),
    fk("run_id", "agent_runs.id"),
    Column("attempt", Integer, nullable=False),
    Column("round", Integer, nullable=False),
    Column("answer_sha256", Text, ForeignKey("answer_texts.sha256"), nullable=False),
    created(clock=True),
    UniqueConstraint("run_id", "attempt", "round"),
    Index("run_answers_sha_idx", "answer_sha256"),
    comment="The text one round of a run attempt returned (0 = first call; later = tool or re-prompt rounds)",
)
