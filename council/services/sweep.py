"""The sweep (DESIGN §7, Delivery): re-enqueue work of every kind that was
created but never finished.

Work travels in Celery messages but lives in the ledger. A message can be
lost — consumed while the database was away, after its task's retries were
spent, or with a worker that died — so every kind of work can be found from
the ledger alone:

- runs that are created or queued with no message waiting for them (a
  scheduler that coalesces skips runs whose message still waits), or running
  on an expired lease;
- evaluations: open or tentative heads holding claims that no evaluation or
  consolidation of them saw;
- cascade continuations that no step continued.

Re-verification needs nothing here: the periodic ``council.reverify`` pass
(its own beat entry) re-verifies every provisional item whose support is
challenged, whether or not a request for it was lost.

Each kind is bounded per sweep (oldest first); what one sweep leaves, the next
finds. Duplicates are harmless: a run's attempts are fenced, the committer is
idempotent, and a continuation is taken by one step only.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import Engine

from council.ledger import cascade
from council.ledger import run_lifecycle as lifecycle
from council.ledger.db import unit_of_work
from council.ledger.unevaluated import unevaluated_versions
from council.services.scheduling import Scheduler

SWEEP_LIMIT = 500  # of each kind, per sweep


@dataclass(frozen=True)
class Swept:
    runs: list[UUID]
    evaluations: list[UUID]
    cascades: list[UUID]


def sweep(
    engine: Engine, scheduler: Scheduler, *, settle_s: float, runs_settle_s: float, limit: int = SWEEP_LIMIT
) -> Swept:
    """Find unfinished work older than ``settle_s`` (runs: ``runs_settle_s``) and hand it to the scheduler."""
    runs = lifecycle.sweep(engine, stale_s=runs_settle_s, limit=limit)
    with unit_of_work(engine) as conn:
        versions = unevaluated_versions(conn, settle_s=settle_s, limit=limit)
        continuations = cascade.unfinished(conn, settle_s=settle_s, limit=limit)
    if runs:
        scheduler.enqueue_runs(runs)
    if versions:
        scheduler.enqueue_evaluations(versions)
    for continuation_id in continuations:  # one message each: a step merges what it takes
        scheduler.enqueue_cascade([continuation_id])
    return Swept(runs, versions, continuations)
