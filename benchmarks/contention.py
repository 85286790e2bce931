"""Contention: 64 evaluator processes race on one ready node (docs/architecture.md §4).

Every evaluator is a spawned process with its own engine and connection. All
are started, connected and waiting before one Event releases them together;
the figure is the time from the release until every one has answered.
Target: under 2 s, with exactly one ``committed`` and the rest
``already_consolidated`` naming the same consolidation.

The racing harness lives in ``benchmarks/harness.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any
from uuid import UUID

from sqlalchemy import text

from benchmarks.harness import bench_database, race
from council.ledger.db import engine_for
from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate
from tests.builders import Ledger

EVALUATORS = 64
TARGET_SECONDS = 2.0

# ---------------------------------------------------------------- evaluator


def evaluator(url: str, version_id: UUID, actor: str, warm: bool = True) -> Callable[[], dict[str, Any]]:
    """Prepare one evaluator: its own engine (one pooled connection), connected.

    ``warm``: first run the committer once as a dry run (it writes nothing), so
    the evaluator answers with the warm statement caches of a long-running
    worker rather than paying each process's first-use costs inside the race.
    """
    engine = engine_for(url, pool_size=1)
    if warm:
        consolidate(UnitOfWork(engine), version_id, actor=actor, dry_run=True)
    else:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    return partial(_evaluate, engine, version_id, actor)


def _evaluate(engine: Any, version_id: UUID, actor: str) -> dict[str, Any]:
    result = consolidate(UnitOfWork(engine), version_id, actor=actor)
    return {"outcome": result.outcome, "consolidation_id": result.consolidation_id}


def run(
    evaluators: int = EVALUATORS, target_seconds: float = TARGET_SECONDS, warm: bool = True
) -> dict[str, Any]:
    with bench_database() as (url, server):
        engine = engine_for(url)
        version_id = Ledger.new(engine, title="contention").ready_node()
        raced = race(evaluator, [(url, version_id, f"evaluator {i}", warm) for i in range(evaluators)])
        with engine.connect() as conn:
            live = conn.execute(
                text("SELECT count(*) FROM consolidations WHERE node_version_id = :v AND status = 'live'"),
                {"v": version_id},
            ).scalar_one()
    answers = [r for r in raced.results if r is not None]
    outcomes = Counter(r["outcome"] for r in answers)
    correct = (
        not raced.errors
        and outcomes == Counter({"committed": 1, "already_consolidated": evaluators - 1})
        and len({r["consolidation_id"] for r in answers}) == 1
        and live == 1
    )
    return {
        "benchmark": "contention",
        "ok": correct and raced.elapsed_s < target_seconds,
        "target": f"{evaluators} evaluators of one ready node all answer < {target_seconds:g} s from release",
        "target_seconds": target_seconds,
        "elapsed_s": round(raced.elapsed_s, 3),
        "evaluators": evaluators,
        "warm": warm,
        "outcomes": dict(outcomes),
        "live_consolidations": live,
        "correct": correct,
        "errors": raced.errors[:3],
        "startup_s": round(raced.ready_s, 2),
        "server": server,
    }
