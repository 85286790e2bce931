# ruff: noqa
"""`council eval`'s evaluation (10,000 imported records × 3 rule sets, the `eval` benchmark's
data and call) timed for two checkouts on one database, alternately in the same sitting.

Usage: ab.py BEFORE_DIR AFTER_DIR [RECORDS] [REPS]. Builds one database with the benchmark's
records (benchmarks/debates.py), then REPS times runs a fresh process of BEFORE, then of AFTER:
each evaluates once to warm up, then once timed (wall, its own CPU), and prints the report's
SHA-256, which must be equal: the decisions do not change."""

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from benchmarks.debates import _import, _rule_sets, debate_file
from benchmarks.harness import bench_database
from council.ledger.db import engine_for
from council.ledger.unit import UnitOfWork

CHILD = r"""
import json, os, sys, time
from council.ledger.db import engine_for
from council.ledger.unit import UnitOfWork
from council.services.observation import evaluate
uow = UnitOfWork(engine_for(sys.argv[1]))
chosen = ["council-default-v1", "council-default-v3", "bench-two-groups-v1"]
evaluate(uow, tags=["bench"], rule_sets=chosen)
cpu, wall = time.process_time(), time.perf_counter()
report = evaluate(uow, tags=["bench"], rule_sets=chosen)
print(json.dumps({"wall": round(time.perf_counter() - wall, 3), "cpu": round(time.process_time() - cpu, 3),
                  "sha": report.report_sha256[:16], "load": round(os.getloadavg()[0], 2)}))
"""


def main() -> None:
    before, after = sys.argv[1], sys.argv[2]
    records = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    with bench_database() as (url, _):
        uow = UnitOfWork(engine_for(url))
        _import(uow, debate_file(records))
        _rule_sets(uow)
        for _ in range(reps):
            for name, root in (("before", before), ("after", after)):
                done = subprocess.run(
                    [sys.executable, "-c", CHILD, url],
                    cwd=root,
                    capture_output=True,
                    text=True,
                    env={**os.environ, "PYTHONPATH": root},
                )
                print(name, done.stdout.strip() or done.stderr[-800:], flush=True)


if __name__ == "__main__":
    main()
