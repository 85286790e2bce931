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
- ``python -c "import typer, pydantic, psycopg"`` (key ``floor_median_s``) —
  the libraries the read cannot start without: its parser, its result models
  and the driver (it runs on psycopg alone, ``council.ledger.pg``),
- ``python -c "import sqlalchemy.dialects.postgresql, psycopg"`` (key
  ``sqlalchemy_median_s``) — what a read through SQLAlchemy paid before it did.

With ``COUNCIL_BENCH_CLI_BASELINE=<another checkout>`` (e.g. ``main``) the read
and ``--help`` of that tree are started in the same rounds (keys ``baseline``:
its medians, and the ratios of this tree's to them), so a change is measured
against the code before it under the same load.

Every process is ``python -m council.cli`` under the same interpreter, started
from a neutral directory (``-m`` puts the working directory first on the path). A
smoke run (``COUNCIL_BENCH_SMOKE``) starts each once after its warm-up start.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import bench_database, sized
from tests.builders import Ledger
from tests.engines import engine_for

ROUNDS = 20
TARGET_S = 0.35
FLOOR = "import typer, pydantic, psycopg"
SQLALCHEMY = "import sqlalchemy.dialects.postgresql, psycopg"
BASELINE_ENV = "COUNCIL_BENCH_CLI_BASELINE"
READ = [sys.executable, "-m", "council.cli", "thread", "list", "--json"]
HELP = [sys.executable, "-m", "council.cli", "--help"]
COMMANDS = {
    "read": READ,
    "help": HELP,
    "python": [sys.executable, "-c", "pass"],
    "floor": [sys.executable, "-c", FLOOR],
    "sqlalchemy": [sys.executable, "-c", SQLALCHEMY],
}


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one start; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.decode(errors='replace')[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _trees() -> dict[str, str]:
    """name -> PYTHONPATH of the trees whose CLI is started: this one, and the baseline's."""
    here = os.pathsep.join(str(Path(p).resolve()) for p in sys.path if p)
    trees = {"": here}
    baseline = os.environ.get(BASELINE_ENV)
    if baseline:
        trees["baseline"] = os.pathsep.join([str(Path(baseline).resolve()), here])
    return trees


def run(rounds: int | None = None, target_s: float = TARGET_S) -> dict[str, Any]:
    rounds = rounds or sized(ROUNDS, 1)
    load = os.getloadavg()
    trees = _trees()
    with bench_database() as (url, server), tempfile.TemporaryDirectory() as bytecode:
        engine = engine_for(url)
        for i in range(3):
            Ledger.new(engine, title=f"cli benchmark {i}", evidence_items=1)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("COUNCIL_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        # Every tree starts from compiled bytecode, as an installed package does: the
        # warm-up start writes it, under a prefix of this run's own (no tree is written).
        env.update(COUNCIL_DATABASE_URL=url, NO_COLOR="1", PYTHONPYCACHEPREFIX=bytecode)
        runs: dict[str, tuple[list[str], dict[str, str]]] = {
            name: (argv, dict(env, PYTHONPATH=trees[""])) for name, argv in COMMANDS.items()
        }
        if "baseline" in trees:
            for name, argv in (("baseline_read", READ), ("baseline_help", HELP)):
                runs[name] = (argv, dict(env, PYTHONPATH=trees["baseline"]))
        for argv, run_env in runs.values():  # warm the page cache, write the bytecode
            _timed(argv, run_env)
        walls: dict[str, list[float]] = {name: [] for name in runs}
        cpus: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(rounds):
            for name, (argv, run_env) in runs.items():
                wall, cpu = _timed(argv, run_env)
                walls[name].append(wall)
                cpus[name].append(cpu)
    median = {name: round(statistics.median(v), 3) for name, v in walls.items()}
    cpu_median = {name: round(statistics.median(v), 3) for name, v in cpus.items()}
    result: dict[str, Any] = {
        "benchmark": "cli",
        "rounds": rounds,
        "read_median_s": median["read"],
        "help_median_s": median["help"],
        "python_median_s": median["python"],
        "floor_median_s": median["floor"],
        "sqlalchemy_median_s": median["sqlalchemy"],
        "cpu_median_s": {name: v for name, v in cpu_median.items() if not name.startswith("baseline")},
        "read_over_floor_s": round(median["read"] - median["floor"], 3),
        "target": {"read_median_s": target_s},
        "ok": median["read"] <= target_s,
        "load": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "server": server,
    }
    if "baseline" in trees:
        result["baseline"] = {
            "tree": os.environ[BASELINE_ENV],
            "read_median_s": median["baseline_read"],
            "help_median_s": median["baseline_help"],
            "cpu_median_s": {"read": cpu_median["baseline_read"], "help": cpu_median["baseline_help"]},
            "read_ratio": round(median["read"] / median["baseline_read"], 3),
            "help_ratio": round(median["help"] / median["baseline_help"], 3),
            "read_cpu_ratio": round(cpu_median["read"] / cpu_median["baseline_read"], 3),
        }
    return result
