"""Who ran each attempt of a run (docs/architecture.md §7, delivery): kept after the run ends,
when its lease owner is cleared.

Each attempt appends a ``claimed`` row (written by the statement that claims
the run, ``council_begin_run_v1``) and an ``ended`` row with its status and reason
(written by the statement that finishes or releases it, or by the claim that
takes over an expired lease). Rows are immutable (migration 0006).
Named SQL: council/sql/run_records.sql.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from council.domain.results.runs import Attempt
from council.ledger.pg import Connection, fetch


@dataclass(frozen=True, slots=True)
class _AttemptEvent:
    attempt: int
    event: str
    worker: str
    status: str | None
    reason: str | None
    created_at: datetime


def attempts_of(conn: Connection, run_id: UUID) -> list[Attempt]:
    """One entry per attempt, in order: its worker, when it was claimed, and how
    it ended (``ended_at``, ``status`` and ``reason`` are None while it runs)."""
    by_attempt: dict[int, dict[str, object]] = {}
    for row in fetch(conn, "attempts_of_run", _AttemptEvent, run_id=run_id):
        entry = by_attempt.setdefault(
            row.attempt,
            {"attempt": row.attempt, "worker": row.worker, "claimed_at": None, "ended_at": None,
             "status": None, "reason": None},
        )  # fmt: skip
        if row.event == "claimed":
            entry["worker"], entry["claimed_at"] = row.worker, row.created_at
        else:
            entry["ended_at"], entry["status"], entry["reason"] = row.created_at, row.status, row.reason
    return [Attempt.model_validate(entry) for entry in by_attempt.values()]
