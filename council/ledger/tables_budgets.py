"""Core metadata of the budget tables (migration 0038): a thread's budget history and the
reservations dispatches take. Re-exported by ``council.ledger.tables``; the schema drift test
compares it with the migrated database (every write runs named SQL, council/sql/budgets.sql)."""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, Integer, Numeric, Table, Text, text
from sqlalchemy.dialects.postgresql import UUID

from council.ledger.table_helpers import created, fk, id_column, metadata

thread_budgets = Table(
    "thread_budgets",
    metadata,
    id_column(),
    fk("thread_id", "threads.id"),
    Column("usd", Numeric(12, 6)),
    Column("reason", Text, nullable=False, server_default=text("''::text")),
    Column("actor", Text, nullable=False),
    created(clock=True),
    Index("thread_budgets_thread_idx", "thread_id", "created_at"),
    comment="A thread's budget in USD, one row per change; the latest is in force (usd NULL: no budget)",
)

budget_reservations = Table(
    "budget_reservations",
    metadata,
    Column("dispatch_id", UUID(as_uuid=True), ForeignKey("dispatches.id"), primary_key=True),
    Column("agent", Text, primary_key=True),
    fk("thread_id", "threads.id"),
    Column("model", Text, nullable=False),
    Column("runs", Integer, nullable=False),
    Column("prompt_tokens", Integer, nullable=False),
    Column("max_output_tokens", Integer, nullable=False),
    Column("run_usd", Numeric(12, 6), nullable=False),
    Column("dispatch_budget_usd", Numeric(12, 6)),
    Column("thread_budget_usd", Numeric(12, 6)),
    created(clock=True),
    Index("budget_reservations_thread_idx", "thread_id"),
    comment="What a dispatch reserved per agent before its runs were enqueued (docs/guide/budgets.md)",
)
