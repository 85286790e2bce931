"""What an agent-CLI run did (docs/architecture.md §7, migration 0009): the trace of each
call of an attempt, and the evidence files the run opened, read from that trace.

Both are written in the transaction that ends the attempt (fenced with it), so
a zombie attempt leaves neither. Rows are immutable.
Named SQL: council/sql/run_records.sql.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from uuid import UUID

from council.domain.results.runs import OpenedEvidence, RunTrace
from council.ledger.pg import Connection, execute, fetch


class Traces:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def record(
        self,
        run_id: UUID,
        attempt: int,
        traces: Sequence[dict[str, object]],
        opened: Sequence[dict[str, str]],
    ) -> None:
        """The attempt's call traces (stored documents) and the evidence it opened
        (``evidence_id``, ``file``, ``tool``), each opened file once."""
        if traces:
            calls = [
                {
                    "call": doc["call"],
                    "runtime": doc["runtime"],
                    "cli_version": doc["cli_version"] or "unknown",
                    "exit_status": doc["exit_status"],
                    "stopped": doc["stopped"],
                    "trace": doc,
                }
                for doc in traces
            ]
            execute(self._conn, "add_run_traces", run_id=run_id, attempt=attempt, traces=json.dumps(calls))
        unique = {o["evidence_id"]: o for o in reversed(opened)}
        if unique:
            execute(
                self._conn,
                "add_opened_evidence",
                run_id=run_id,
                attempt=attempt,
                opened=json.dumps(list(reversed(unique.values()))),
            )

    def of_run(self, run_id: UUID) -> list[RunTrace]:
        """Each call's trace, by attempt and call."""
        return fetch(self._conn, "traces_of_run", RunTrace, run_id=run_id)

    def opened_of_run(self, run_id: UUID) -> list[OpenedEvidence]:
        """Every evidence item the run opened or cited, as the dashboard view has it."""
        return fetch(self._conn, "opened_of_run", OpenedEvidence, run_id=run_id)
