"""An `ask` of three simulated agents, per round, against a baseline tree measured in the same run.

The workload, the same in both trees: a fresh database migrated to the tree's head; then, in
one process, ``council.services.ask.ask`` (claude, codex and glm, simulated, the default
rounds) on a new question, every run it enqueues executed to its end one after another
(``execute_run``, the workers' own path: claim, compile and store the request, call the
simulated model through litellm, check and apply the answer, the round's follow-up), and the
versions the last round sends to the commit queue decided (``consolidate_many``). The clock
runs from the ask to the last decision; its time is divided by the dispatch's rounds (a
council dispatch has two blind rounds before its deliberative ones, a deliberative one had
one). One ask warms the process up (litellm's first call), then ``ASKS`` are timed; the
figure is the median seconds per round over the timed asks of ``PASSES`` workloads per tree,
run alternately.

The baseline is another checkout of the project (``COUNCIL_BENCH_BASELINE_TREE``; by default
a detached worktree of ``main``, made for the run and removed after), whose code runs the same
workload in a child process with the tree first on its path. Both children share one
Postgres server (``COUNCIL_BENCH_DATABASE_URL``, else an embedded pgserver started for the
run), each in a database of its own. The target (key ``ok``): this tree's seconds per round
at most ``TARGET_RATIO`` times the baseline's.

A smoke run (``COUNCIL_BENCH_SMOKE``) times one ask after the warm-up, one workload a tree,
and measures the baseline only when ``COUNCIL_BENCH_BASELINE_TREE`` names one (a fresh clone
need not have ``main``); without it the baseline is named under ``skipped``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ASKS = 4
PASSES = 2  # workloads per tree, alternating
TARGET_RATIO = 1.5
BASELINE_ENV = "COUNCIL_BENCH_BASELINE_TREE"
QUESTIONS = (
    "Is SQLite parity sufficient for the test suite?",
    "Does the replica keep up under the production write load?",
    "Is the cache safe to enable for anonymous sessions?",
    "Will the new index speed up the nightly report?",
    "Is the migration safe to run during business hours?",
    "Does the retry policy bound the queue's growth?",
)


def workload(asks: int = ASKS) -> dict[str, Any]:
    """Time ``asks`` asks (after one that warms up) in this process, on the code it imports
    (a baseline tree's: so nothing here may need more of its ``benchmarks`` than
    ``bench_database``)."""
    from benchmarks.harness import bench_database
    from council.adapters.scheduler import Recorder
    from council.services.ask import Question, ask
    from council.services.consolidation import consolidate_many
    from council.services.execution import execute_run
    from tests.engines import engine_for, uow_of

    per_round: list[float] = []
    rounds: set[int] = set()
    with bench_database() as (url, _server):
        uow = uow_of(engine_for(url))
        for i in range(asks + 1):
            scheduler = Recorder()
            question = Question(text=QUESTIONS[i % len(QUESTIONS)], agents=("claude", "codex", "glm"))
            started = time.perf_counter()
            asked = ask(uow, scheduler, question, actor="bench", simulate="always")
            done = 0
            while done < len(scheduler.runs):
                execute_run(uow, scheduler, scheduler.runs[done])
                done += 1
            if scheduler.evaluations:
                consolidate_many(uow, list(dict.fromkeys(scheduler.evaluations)), actor="bench")
            elapsed = time.perf_counter() - started
            if i:  # the first warms the process up
                per_round.append(elapsed / asked.dispatch.rounds)
                rounds.add(asked.dispatch.rounds)
    return {
        "median_s_per_round": statistics.median(per_round),
        "s_per_round": [round(t, 4) for t in per_round],
        "rounds": sorted(rounds),
        "asks": asks,
    }


def run() -> dict[str, Any]:
    from benchmarks.harness import sized, smoke

    with ExitStack() as stack:
        admin = os.environ.get("COUNCIL_BENCH_DATABASE_URL") or stack.enter_context(_embedded())
        # A smoke run makes no worktree of main: a fresh clone need not have one.
        baseline = os.environ.get(BASELINE_ENV) or (
            None if smoke() else stack.enter_context(_main_worktree())
        )
        home = stack.enter_context(tempfile.TemporaryDirectory(prefix="council-bench-ask-"))
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")},
            "COUNCIL_BENCH_DATABASE_URL": admin,
            "COUNCIL_HOME": home,
            "COUNCIL_OFFLINE": "1",
            "COUNCIL_SIMULATE": "always",
        }
        asks = sized(ASKS, 1)
        # Alternately (A B A B), so neither tree alone meets a busier stretch of a shared machine.
        parts: dict[str, list[dict[str, Any]]] = {"here": [], "there": []}
        for _ in range(sized(PASSES, 1)):
            parts["here"].append(_child(ROOT, env, asks))
            if baseline is not None:
                parts["there"].append(_child(Path(baseline), env, asks))
    here = _joined(parts["here"])
    if baseline is None:
        return {
            "benchmark": "ask",
            "ok": False,
            "this_tree": here,
            "skipped": {
                "baseline": f"no baseline tree: a smoke run measures one only when {BASELINE_ENV} names it"
            },
        }
    there = _joined(parts["there"])
    ratio = here["median_s_per_round"] / there["median_s_per_round"]
    return {
        "benchmark": "ask",
        "ok": ratio <= TARGET_RATIO,
        "target_ratio": TARGET_RATIO,
        "ratio": round(ratio, 3),
        "this_tree": here,
        "baseline": {**there, "tree": _describe(Path(baseline))},
    }


def _joined(parts: list[dict[str, Any]]) -> dict[str, Any]:
    times = [t for p in parts for t in p["s_per_round"]]
    return {
        "median_s_per_round": statistics.median(times),
        "s_per_round": times,
        "rounds": sorted({r for p in parts for r in p["rounds"]}),
        "asks": sum(p["asks"] for p in parts),
    }


def _child(tree: Path, env: dict[str, str], asks: int) -> dict[str, Any]:
    """The workload in a child process whose ``council`` (and ``benchmarks``) is ``tree``'s."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from importlib.machinery import SourceFileLoader; "
        "bench = SourceFileLoader('bench_ask', sys.argv[2]).load_module(); "
        "print(json.dumps(bench.workload(int(sys.argv[3]))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tree), str(Path(__file__).resolve()), str(asks)],
        cwd=tree,
        env={**env, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the workload failed in {tree}:\n{done.stderr[-4000:]}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _describe(tree: Path) -> str:
    head = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return f"{tree} at {head.stdout.strip() or 'unknown commit'}"


@contextmanager
def _main_worktree() -> Iterator[str]:
    path = Path(tempfile.mkdtemp(prefix="council-bench-main-")) / "tree"
    git = ["git", "-C", str(ROOT), "worktree"]
    subprocess.run([*git, "add", "--detach", str(path), "main"], check=True, capture_output=True)
    try:
        yield str(path)
    finally:
        subprocess.run([*git, "remove", "--force", str(path)], capture_output=True, check=False)


@contextmanager
def _embedded() -> Iterator[str]:
    from tests.migrations.schema_dump import embedded_postgres

    with embedded_postgres() as admin:
        yield admin
