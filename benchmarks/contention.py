"""Contention: 64 evaluator processes race on one ready node (docs/architecture.md §4).

Every evaluator is a spawned process with its own engine and connection. All
are started, connected and waiting before they are released together, at one
moment of the clock; the figure is the time from that moment until every one
has answered. Target (issue 19): under 0.5 s, with exactly one ``committed``
and the rest ``already_consolidated`` naming the same consolidation. Beside it:
the CPU the evaluators and their Postgres backends spent answering, and how
late the last evaluator began after the release (the machine's, not the
committer's, delay).

The racing harness lives in ``benchmarks/harness.py``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any
from uuid import UUID

from sqlalchemy import text

from benchmarks.harness import bench_database, process_cpu_s, race, sized
from council.services.consolidation import consolidate
from tests.builders import Ledger
from tests.engines import engine_for, uow_of

EVALUATORS = 64
TARGET_SECONDS = 0.5

# ---------------------------------------------------------------- evaluator


def evaluator(url: str, version_id: UUID, actor: str, warm: bool = True) -> Callable[[], dict[str, Any]]:
    """Prepare one evaluator: its own engine (one pooled connection), connected.

    ``warm``: first run the committer once as a dry run (it writes nothing), so
    the evaluator answers with the warm statement caches of a long-running
    worker rather than paying each process's first-use costs inside the race.
    """
    engine = engine_for(url, pool_size=1)
    if warm:
        consolidate(uow_of(engine), version_id, actor=actor, dry_run=True)
    with engine.connect() as conn:  # the one pooled connection the evaluation will use
        backend = int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())
    process_cpu_s(backend)  # its first call imports psutil: not inside the race
    return partial(_evaluate, engine, version_id, actor, backend)


def _evaluate(engine: Any, version_id: UUID, actor: str, backend: int) -> dict[str, Any]:
    cpu, server_cpu = time.process_time(), process_cpu_s(backend)
    result = consolidate(uow_of(engine), version_id, actor=actor)
    server_after = process_cpu_s(backend)
    return {
        "outcome": result.outcome,
        "consolidation_id": result.consolidation_id,
        "cpu_s": time.process_time() - cpu,
        "backend_cpu_s": None if server_cpu is None or server_after is None else server_after - server_cpu,
    }


def run(
    evaluators: int | None = None, target_seconds: float = TARGET_SECONDS, warm: bool = True
) -> dict[str, Any]:
    evaluators = evaluators or sized(EVALUATORS, 3)
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
    backends = [r["backend_cpu_s"] for r in answers]
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
        "release_lag_s": round(raced.release_lag_s, 3),
        "evaluators": evaluators,
        "warm": warm,
        "outcomes": dict(outcomes),
        "live_consolidations": live,
        # CPU of all the answers (one commit, the rest repeats), per answer
        "cpu_ms_per_answer": {
            "evaluators": round(1000 * sum(r["cpu_s"] for r in answers) / max(len(answers), 1), 2),
            "their_postgres_backends": (
                round(1000 * sum(backends) / len(backends), 2) if backends and None not in backends else None
            ),
        },
        "committed_cpu_ms": {
            "evaluator": round(1000 * sum(r["cpu_s"] for r in answers if r["outcome"] == "committed"), 2),
            "backend": round(
                1000 * sum(r["backend_cpu_s"] or 0.0 for r in answers if r["outcome"] == "committed"), 2
            ),
        },
        "correct": correct,
        "errors": raced.errors[:3],
        "startup_s": round(raced.ready_s, 2),
        "server": server,
    }
