"""Who ran each attempt of a run (docs/architecture.md §7, delivery): kept after the run ends,
when its lease owner is cleared.

Each attempt appends a ``claimed`` row (written by the statement that claims
the run, ``claim_run``) and an ``ended`` row with its status and reason
(written by the statement that finishes or releases it, or by the claim that
takes over an expired lease). Rows are immutable (migration 0006).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Column, Connection, Integer, Table, Text, UniqueConstraint, select

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


def attempts_of(conn: Connection, run_id: UUID) -> list[dict[str, Any]]:
    """One entry per attempt, in order: its worker, when it was claimed, and how
    it ended (``ended_at``, ``status`` and ``reason`` are None while it runs)."""
    rows = conn.execute(
        select(run_attempts).where(run_attempts.c.run_id == run_id).order_by(run_attempts.c.attempt)
    ).mappings()
    by_attempt: dict[int, dict[str, Any]] = {}
    for row in rows:
        entry = by_attempt.setdefault(
            row["attempt"],
            {"attempt": row["attempt"], "worker": row["worker"], "claimed_at": None, "ended_at": None,
             "status": None, "reason": None},
        )  # fmt: skip
        if row["event"] == "claimed":
            entry.update(worker=row["worker"], claimed_at=row["created_at"])
        else:
            entry.update(ended_at=row["created_at"], status=row["status"], reason=row["reason"])
    return list(by_attempt.values())
