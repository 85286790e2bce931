"""Run a benchmark: ``python -m benchmarks NAME [--json] [--strict] [--smoke]``.

Each benchmark module exposes ``run() -> dict`` with at least ``benchmark``
and ``ok`` (whether its recorded target was met). Figures are reported as
measured; ratios are against a baseline measured in the same run. A part a
benchmark could not run here (a missing tool, a second tree) is named under
``skipped`` with the reason, never left out silently. ``--smoke`` (or
``COUNCIL_BENCH_SMOKE=1``) runs it at a tiny size: the document then says
``"smoke": true``, and its figures measure nothing.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any

from benchmarks.harness import SMOKE_ENV, smoke

BENCHMARKS = {
    "grouping": "benchmarks.grouping",
    "commit": "benchmarks.commit",
    "contention": "benchmarks.contention",
    "frontier": "benchmarks.frontier",
    "dispatch": "benchmarks.dispatch",
    "cascade": "benchmarks.cascade",
    "runtimes": "benchmarks.runtimes",
    "counterfactual": "benchmarks.counterfactual",
    "storage": "benchmarks.storage",
    "cli": "benchmarks.cli",
    "latency": "benchmarks.latency",
    "events": "benchmarks.events",
    "steps": "benchmarks.steps",
    "import": "benchmarks.imports",
    "eval": "benchmarks.evaluation",
    "worker-profile": "benchmarks.worker_profile",
    "peer": "benchmarks.peer",
    "model-call": "benchmarks.model_call",
    "statements": "benchmarks.statements",
    "ask": "benchmarks.ask",
    "dead-agent": "benchmarks.dead_agent",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("name", choices=sorted(BENCHMARKS))
    parser.add_argument("--json", action="store_true", help="print exactly one JSON document")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    parser.add_argument("--smoke", action="store_true", help=f"a tiny size, to check it runs ({SMOKE_ENV}=1)")
    args = parser.parse_args(argv)
    if args.smoke:
        os.environ[SMOKE_ENV] = "1"  # before the module runs: its workers and contenders inherit it
    result: dict[str, Any] = importlib.import_module(BENCHMARKS[args.name]).run()
    if smoke():
        result["smoke"] = True
    if args.json:
        print(json.dumps(result, sort_keys=True, default=str))
    else:
        print(json.dumps(result, indent=2, sort_keys=True, default=str))
    return 1 if args.strict and not result.get("ok", False) else 0


if __name__ == "__main__":
    sys.exit(main())
