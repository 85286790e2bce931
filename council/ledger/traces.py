"""What an agent-CLI run did (docs/architecture.md §7, migration 0009): the trace of each
call of an attempt, and the evidence files the run opened, read from that trace.

Both are written in the transaction that ends the attempt (fenced with it), so
a zombie attempt leaves neither. Rows are immutable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Column, Connection, Index, Integer, Table, Text, UniqueConstraint, insert, select, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert

from council.ledger.table_helpers import created, fk, id_column, metadata

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


class Traces:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def record(
        self, run_id: UUID, attempt: int, traces: Sequence[dict[str, Any]], opened: Sequence[dict[str, str]]
    ) -> None:
        """The attempt's call traces (stored documents) and the evidence it opened
        (``evidence_id``, ``file``, ``tool``), each opened file once."""
        if traces:
            self._conn.execute(
                insert(run_traces),
                [
                    {
                        "run_id": run_id,
                        "attempt": attempt,
                        "call": doc["call"],
                        "runtime": doc["runtime"],
                        "cli_version": doc["cli_version"] or "unknown",
                        "exit_status": doc["exit_status"],
                        "stopped": doc["stopped"],
                        "trace": doc,
                    }
                    for doc in traces
                ],
            )
        unique = {o["evidence_id"]: o for o in reversed(opened)}
        if unique:
            self._conn.execute(
                pg_insert(run_opened_evidence).on_conflict_do_nothing(
                    index_elements=["run_id", "attempt", "evidence_id"]
                ),
                [{"run_id": run_id, "attempt": attempt, **o} for o in reversed(unique.values())],
            )

    def of_run(self, run_id: UUID) -> list[dict[str, Any]]:
        """Each call's trace, by attempt and call."""
        c = run_traces.c
        rows = self._conn.execute(
            select(
                c.attempt, c.call, c.runtime, c.cli_version, c.exit_status, c.stopped, c.trace, c.created_at
            )
            .where(c.run_id == run_id)
            .order_by(c.attempt, c.call)
        ).mappings()
        return [dict(r) for r in rows]

    def opened_of_run(self, run_id: UUID) -> list[dict[str, Any]]:
        """Every evidence item the run opened or cited, as the dashboard view has it."""
        rows = self._conn.execute(_OPENED, {"run_id": run_id}).mappings()
        return [dict(r) for r in rows]


_OPENED = text(
    "SELECT evidence_id, opened, cited, opened_at, citations FROM council_v_opened_evidence "
    "WHERE run_id = :run_id ORDER BY opened DESC, opened_at, evidence_id"
)
