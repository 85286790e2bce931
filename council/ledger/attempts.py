"""Who ran each attempt of a run (docs/architecture.md §7, delivery): kept after the run ends,
when its lease owner is cleared.

Each attempt appends a ``claimed`` row (written by the statement that claims
the run, ``claim_run``) and an ``ended`` row with its status and reason
(written by the statement that finishes or releases it, or by the claim that
takes over an expired lease). Rows are immutable (migration 0006).
Named SQL: council/sql/run_records.sql.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict
from uuid import UUID

from council.ledger.pg import Connection, fetch


class AttemptRow(TypedDict):
    """One attempt of a run: its worker, when it was claimed, and how it ended."""

    attempt: int
    worker: str
    claimed_at: datetime | None
    ended_at: datetime | None  # None, with status and reason, while it runs
    status: str | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class _AttemptEvent:
    attempt: int
    event: str
    worker: str
    status: str | None
    reason: str | None
    created_at: datetime


def attempts_of(conn: Connection, run_id: UUID) -> list[AttemptRow]:
    """One entry per attempt, in order: its worker, when it was claimed, and how
    it ended (``ended_at``, ``status`` and ``reason`` are None while it runs)."""
    by_attempt: dict[int, AttemptRow] = {}
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
    return list(by_attempt.values())
