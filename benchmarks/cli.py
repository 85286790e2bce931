"""CLI start-up: wall time of `council thread list --json` and `council --help`,
against `python -c pass` and the dependency floor, measured in one run.

Scripts start the CLI hundreds of times (``$(council … --json | …)``), so what
a user feels is the wall time of one start. On a migrated database holding a
few threads, the benchmark starts, interleaved round-robin so that the load
of a shared machine falls on all of them alike (``ROUNDS`` rounds, median of
each; also the CPU time of each child):

- ``council thread list --json`` (key ``read_median_s``; target ≤ 0.35 s),
- ``council --help``,
- ``python -c pass`` (the interpreter alone),
- ``python -c "import sqlalchemy.dialects.postgresql, psycopg"`` — the floor
  below which no command that reads the database can start.

Every process is ``python -m council.cli`` under the same interpreter.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

from benchmarks.harness import bench_database
from council.ledger.db import engine_for
from tests.builders import Ledger

ROUNDS = 20
TARGET_S = 0.35
FLOOR = "import sqlalchemy.dialects.postgresql, psycopg"
COMMANDS = {
    "read": [sys.executable, "-m", "council.cli", "thread", "list", "--json"],
    "help": [sys.executable, "-m", "council.cli", "--help"],
    "python": [sys.executable, "-c", "pass"],
    "floor": [sys.executable, "-c", FLOOR],
}


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one start; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.decode(errors='replace')[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def run(rounds: int = ROUNDS, target_s: float = TARGET_S) -> dict[str, Any]:
    load = os.getloadavg()
    with bench_database() as (url, server):
        engine = engine_for(url)
        for i in range(3):
            Ledger.new(engine, title=f"cli benchmark {i}", evidence_items=1)
        env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
        env.update(COUNCIL_DATABASE_URL=url, NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        for argv in COMMANDS.values():  # warm the page cache and the bytecode
            _timed(argv, env)
        walls: dict[str, list[float]] = {name: [] for name in COMMANDS}
        cpus: dict[str, list[float]] = {name: [] for name in COMMANDS}
        for _ in range(rounds):
            for name, argv in COMMANDS.items():
                wall, cpu = _timed(argv, env)
                walls[name].append(wall)
                cpus[name].append(cpu)
    median = {name: round(statistics.median(v), 3) for name, v in walls.items()}
    cpu_median = {name: round(statistics.median(v), 3) for name, v in cpus.items()}
    return {
        "benchmark": "cli",
        "rounds": rounds,
        "read_median_s": median["read"],
        "help_median_s": median["help"],
        "python_median_s": median["python"],
        "floor_median_s": median["floor"],
        "cpu_median_s": cpu_median,
        "read_over_floor_s": round(median["read"] - median["floor"], 3),
        "target": {"read_median_s": target_s},
        "ok": median["read"] <= target_s,
        "load": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "server": server,
    }
