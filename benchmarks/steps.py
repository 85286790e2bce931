"""Where a run's CPU goes, step by step: the profile behind the latency benchmark's bound.

One process, one thread, no Celery: runs of the latency benchmark's shape (a blind
independent dispatch of 8 simulated agents per proposition, no model latency) are
executed one after another through ``council.services.execution.execute_run``, after
``WARM_UP`` untimed runs. The thread's own CPU (``time.thread_time``) is summed around
each step — the claim, compiling the briefing, storing the request, the model call
through litellm, and the check-and-apply transaction with its parts — and reported per
run; then each touched version is evaluated once, and its CPU reported per evaluation.
Postgres's CPU is the whole server's (``harness.server_cpu_s``) when it is local.

Steps nest (the output check is inside the check-and-apply transaction), so they do not
add up to the total; what no step names (the units of work, metrics, parsing the answer)
is the rest. litellm also logs each call on a thread of its own, which the run's thread
time leaves out: ``process_cpu_ms_per_run`` includes it. No target: it says where the
time of ``latency``'s c goes (docs/benchmarks.md, "Latency-bound runs"). A smoke run
(``COUNCIL_BENCH_SMOKE``) times the 6 runs of one proposition after 2 untimed.
"""

from __future__ import annotations

import functools
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from benchmarks.dispatch import _environ
from benchmarks.harness import bench_database, postgres_cpu_reader, sized

THREADS = 60  # propositions; 8 runs each
WARM_UP = 40


@contextmanager
def _timed(steps: list[tuple[Any, str, str]], spent: Counter[str]) -> Iterator[None]:
    """Sum the calling thread's CPU in each (owner, attribute) into ``spent[label]``."""
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in steps]

    def wrap(function: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += time.thread_time() - began

        return timed

    for (owner, name, label), (_, _, function) in zip(steps, saved, strict=True):
        setattr(owner, name, wrap(function, label))
    try:
        yield
    finally:
        for owner, name, function in saved:
            setattr(owner, name, function)


def timed_steps() -> list[tuple[Any, str, str]]:
    """(owner, attribute, label) of each step timed: the function a run calls it through
    (module globals and methods, looked up at call time, so wrapping the attribute times it)."""
    import council.ledger.apply_output as apply_output
    import council.services.execution as execution
    import council.services.in_tx.output as in_tx_output
    import council.services.run_calls as run_calls
    from council.agents import gateway
    from council.ledger.run_phases import RunPhases
    from council.ledger.runs import Runs

    return [
        (RunPhases, "begin", "claim and briefing, one call"),
        (execution, "compile_for", "compile the briefing"),
        (Runs, "store_request", "store the request"),
        (gateway, "complete", "the model call (litellm)"),
        (run_calls, "apply_answer", "check and apply, one transaction"),
        (apply_output, "check_output", "— the output check"),
        (in_tx_output, "lint_prose", "— lint"),
        (Runs, "finish", "— the run's end"),
    ]


def run() -> dict[str, Any]:
    from benchmarks.latency import _create_runs, _profiles, _seed

    load = os.getloadavg()
    with ExitStack() as stack:
        home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="council-bench-steps-")))
        url, server = stack.enter_context(bench_database())
        stack.enter_context(
            _environ(
                {
                    "COUNCIL_DATABASE_URL": url,
                    "COUNCIL_HOME": str(home),
                    "COUNCIL_PROFILES": str(_profiles(home)),
                    "COUNCIL_SIMULATE": "1",
                    "COUNCIL_OFFLINE": "1",
                    "COUNCIL_SIM_LATENCY": "0",
                }
            )
        )
        import council.services.execution as execution
        from council.adapters.scheduler import Recorder
        from council.services.consolidation import consolidate_many
        from council.services.preparation import prepare
        from tests.engines import engine_for, uow_of

        engine = engine_for(url)
        runs = _create_runs(engine, _seed(engine, sized(THREADS, 1)))
        warm_up = sized(WARM_UP, 2)
        prepare()
        uow, recorder = uow_of(engine), Recorder()
        for run_id in runs[:warm_up]:
            execution.execute_run(uow, recorder, run_id)
        recorder.evaluations.clear()
        timed = runs[warm_up:]
        steps = timed_steps()
        spent: Counter[str] = Counter()
        postgres, scope = postgres_cpu_reader(engine)
        with _timed(steps, spent):
            thread0, process0, db0 = time.thread_time(), time.process_time(), postgres()
            for run_id in timed:
                execution.execute_run(uow, recorder, run_id)
            thread_s, process_s = time.thread_time() - thread0, time.process_time() - process0
            db_s = postgres() - db0
        versions = list(dict.fromkeys(recorder.evaluations))
        thread0, db0 = time.thread_time(), postgres()
        for version in versions:
            consolidate_many(uow, [version], actor="bench:steps")
        eval_s, eval_db_s = time.thread_time() - thread0, postgres() - db0
    n = len(timed)
    return {
        "benchmark": "steps",
        "runs": n,
        "thread_cpu_ms_per_run": round(1000 * thread_s / n, 2),
        "process_cpu_ms_per_run": round(1000 * process_s / n, 2),
        "postgres_cpu_ms_per_run": round(1000 * db_s / n, 2),
        "postgres_cpu_scope": scope,
        "steps_ms_per_run": {label: round(1000 * spent[label] / n, 3) for _, _, label in steps},
        "evaluations": len(versions),
        "evaluation_cpu_ms": round(1000 * eval_s / max(1, len(versions)), 2),
        "evaluation_postgres_cpu_ms": round(1000 * eval_db_s / max(1, len(versions)), 2),
        "load": [round(x, 2) for x in load],
        "server": server,
        "ok": True,  # no target: a profile
    }
