"""A worker prepares before it takes work (docs/architecture.md §7): it imports the run
path, loads litellm with one simulated call and puts what it loaded out of the garbage
collector's way. Given that, its first run and that run's evaluation import nothing more
of Council or litellm — so a new worker's first wave of runs does not pay seconds of
imports together, on every thread at once.

A fresh interpreter, not this test process (which has imported everything already), runs
the Celery tasks' own functions against the test's real Postgres."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.services.dispatch import dispatch
from tests.builders import Ledger
from tests.engines import uow_of
from tests.processes import worker_environment

FIRST_RUN = """
import gc, json, sys
from council.workers import tasks
tasks._prepare_before_the_pool_forks()
frozen = gc.get_freeze_count()
before = set(sys.modules)
ran = tasks.execute_run(sys.argv[1])
evaluated = tasks.evaluate_nodes(ran["touched_versions"])
loaded = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in ("council", "litellm", "tiktoken"))
print(json.dumps({"frozen": frozen, "status": ran["status"], "evaluated": evaluated, "loaded": loaded}))
"""


def test_a_prepared_worker_imports_nothing_more_for_its_first_run(
    engine: Engine, db_url: str, redis_url: str, tmp_path: Path
) -> None:
    # Given a run dispatched on a thread with one open proposition
    ledger = Ledger.new(engine, evidence_items=1)
    ledger.node("The adapter returns the same rows", cites=[ledger.evidence[0]])
    created = Recorder()
    dispatch(uow_of(engine), created, ledger.thread_id, ["claude"], mode="independent", rounds=1, actor="t")
    # When a fresh worker process prepares, then runs it and evaluates what it touched
    env = worker_environment(db_url, redis_url, tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", FIRST_RUN, str(created.runs[0])],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    # Then the run succeeded, was evaluated, and loaded no module of Council or litellm
    assert found["status"] == "succeeded"
    assert list(found["evaluated"]["outcomes"].values()) == ["not_ready"]
    assert found["loaded"] == []
    # and the heap it prepared is out of the collector's sight
    assert found["frozen"] > 100_000
