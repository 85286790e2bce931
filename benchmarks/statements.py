"""Transactions, statements and round trips a run costs, phase by phase (issue 36 part 3).

The worker-profile load's councils (3 agents × 2 rounds, one proposition a thread, every
agent a real profile served over HTTP by the fake chat model, here without latency), each
run executed in this process through ``council.services.execution.execute_run`` one after
another, round 2 when its round 1 has ended, then every version the runs touched evaluated
as the commit worker does (``consolidate_many``, one call per enqueue). Every statement
psycopg sends (``Cursor.execute``; ``executemany`` counted once, it is pipelined) and every
COMMIT or ROLLBACK is counted, and charged to the phase of the run named by the innermost
frame of its Python stack found in ``PHASES``. A round trip is a statement, plus a BEGIN
and a COMMIT a transaction (psycopg sends BEGIN on its own before a transaction's first
statement). Reported per run, with each statement's named query (``council/sql``) where it
has one. No target: it says where the Postgres half of ``worker-profile`` comes from.
A smoke run (``COUNCIL_BENCH_SMOKE``) counts one council.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from benchmarks.dispatch import _environ
from benchmarks.harness import bench_database, sized

COUNCILS = 20
AGENTS = ("alpha", "beta", "gamma")
ROUNDS = 2
# (function name, file suffix) -> phase; the innermost frame that matches names the phase.
PHASES = (
    ("end_run", "council/ledger/run_phases.py", "apply: keep, fence, check reads (end_run_v1)"),
    ("apply_run", "council/ledger/run_phases.py", "apply: claims, citations, end (apply_run_v1)"),
    ("check_output", "council/ledger/apply_output.py", "apply: the output check's reads"),
    ("lint_prose", "council/services/in_tx/lint.py", "apply: lint"),
    ("write_checked_claims", "council/ledger/claims.py", "apply: claims, their citations and events"),
    ("finish", "council/ledger/runs.py", "apply: the run's end (finish)"),
    ("apply_output", "council/ledger/apply_output.py", "apply: other writes"),
    ("apply_answer", "council/services/run_calls.py", "apply: fence, BEGIN/COMMIT"),
    ("keep_answer", "council/services/run_answers.py", "keep the answer"),
    ("compile_for", "council/services/in_tx/briefing.py", "request: the briefing's reads"),
    ("store_request", "council/ledger/runs.py", "request: store it with its exposures"),
    ("_prepare", "council/services/execution.py", "request: the rest (opened evidence)"),
    ("begin_run", "council/ledger/run_phases.py", "claim and briefing (begin_run_v1)"),
    ("try_run", "council/services/execution.py", "claim: BEGIN/COMMIT"),
    ("quorum_versions", "council/ledger/runs.py", "follow-up: quorum"),
    ("open_next_round", "council/services/rounds.py", "follow-up: next round"),
    ("follow_up", "council/services/run_followups.py", "follow-up: the rest"),
    ("consolidate_many", "council/services/consolidation.py", "evaluation (commit worker)"),
)


class _Counts:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.statements: Counter[str] = Counter()
        self.transactions: Counter[str] = Counter()
        self.named: Counter[tuple[str, str]] = Counter()
        self.wall: Counter[tuple[str, str]] = Counter()  # seconds waited on each, client side
        self.server: Counter[tuple[str, str]] = Counter()  # the backend's CPU seconds for each
        self.active = False


def _phase(frame: FrameType | None) -> str:
    while frame is not None:
        code = frame.f_code
        for name, suffix, phase in PHASES:
            if code.co_name == name and code.co_filename.endswith(suffix):
                return phase
        frame = frame.f_back
    return "other"


def _backend_cpu_s(pid: int) -> float:
    """CPU seconds the backend ``pid`` has run (``/proc/PID/schedstat``, nanoseconds; 0 when
    the server is not a process of this machine)."""
    try:
        with open(f"/proc/{pid}/schedstat") as stat:
            return int(stat.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


@contextmanager
def _counting(counts: _Counts) -> Iterator[None]:
    import psycopg

    from council import sql

    by_text = {sql.driver_sql(name): name for name in sql.names()}
    cursor, connection = psycopg.Cursor, psycopg.Connection
    saved = (cursor.execute, cursor.executemany, connection.commit, connection.rollback)

    def label(query: Any) -> str:
        text = query if isinstance(query, str) else str(query)
        return by_text.get(text) or " ".join(text.split())[:60]

    def statement(query: Any, began: float, backend: int, cpu: float) -> None:
        if counts.active:
            phase = _phase(sys._getframe(2))
            key = (phase, label(query))
            with counts.lock:
                counts.statements[phase] += 1
                counts.named[key] += 1
                counts.wall[key] += time.perf_counter() - began
                counts.server[key] += _backend_cpu_s(backend) - cpu

    def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        backend = self.connection.info.backend_pid
        began, cpu = time.perf_counter(), _backend_cpu_s(backend)
        try:
            return saved[0](self, query, *args, **kwargs)
        finally:
            statement(query, began, backend, cpu)

    def executemany(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        backend = self.connection.info.backend_pid
        began, cpu = time.perf_counter(), _backend_cpu_s(backend)
        try:
            return saved[1](self, query, *args, **kwargs)
        finally:
            statement(query, began, backend, cpu)

    def ended(self: Any, end: Any) -> None:
        if not counts.active or self.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            end(self)
            return
        backend = self.info.backend_pid
        cpu = _backend_cpu_s(backend)
        end(self)
        phase = _phase(sys._getframe(2))
        with counts.lock:
            counts.transactions[phase] += 1
            counts.server[(phase, "COMMIT")] += _backend_cpu_s(backend) - cpu

    def commit(self: Any) -> None:
        ended(self, saved[2])

    def rollback(self: Any) -> None:
        ended(self, saved[3])

    cursor.execute, cursor.executemany = execute, executemany  # type: ignore[method-assign]
    connection.commit, connection.rollback = commit, rollback  # type: ignore[method-assign]
    try:
        yield
    finally:
        cursor.execute, cursor.executemany, connection.commit, connection.rollback = saved  # type: ignore[method-assign]


def run() -> dict[str, Any]:
    from tests.fakes.chat_model import chat_model, local_profiles

    councils = int(os.environ.get("COUNCIL_BENCH_STATEMENTS_COUNCILS", sized(COUNCILS, 1)))
    counts = _Counts()
    with ExitStack() as stack:
        home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="council-bench-statements-")))
        url, server = stack.enter_context(bench_database())
        base_url, _ = stack.enter_context(chat_model())
        stack.enter_context(
            _environ(
                {
                    "COUNCIL_DATABASE_URL": url,
                    "COUNCIL_HOME": str(home),
                    "COUNCIL_PROFILES": str(local_profiles(home / "profiles.toml", base_url, *AGENTS)),
                    "COUNCIL_SIMULATE": "0",
                    "COUNCIL_OFFLINE": "1",
                }
            )
        )
        from council.adapters.scheduler import Recorder
        from council.services.consolidation import consolidate_many
        from council.services.dispatch import dispatch
        from council.services.execution import execute_run
        from tests.builders import Ledger
        from tests.engines import engine_for, uow_of

        engine = engine_for(url)
        uow = uow_of(engine)

        class Evaluations(Recorder):
            def __init__(self) -> None:
                super().__init__()
                self.sent: list[list[Any]] = []

            def enqueue_evaluations(self, version_ids: Any) -> None:
                self.sent.append(list(version_ids))

        def council(i: int, recorder: Evaluations) -> None:
            ledger = Ledger.new(engine, title=f"statements {i}", evidence_items=2)
            ledger.node(f"Proposition {i}: the adapter returns the same rows", cites=[ledger.evidence[0]])
            dispatch(
                uow, recorder, ledger.thread_id, list(AGENTS), mode="independent", rounds=ROUNDS, actor="b"
            )

        def work(recorder: Evaluations) -> int:
            done = 0
            while recorder.runs:
                run_id = recorder.runs.pop(0)
                result = execute_run(uow, recorder, run_id)
                if result.status != "succeeded":
                    raise RuntimeError(f"run {run_id}: {result.status} {result.error}")
                done += 1
            for versions in recorder.sent:
                consolidate_many(uow, versions, actor="worker:commit")
            return done

        warm = Evaluations()
        council(-1, warm)
        work(warm)
        recorder = Evaluations()
        for i in range(councils):
            council(i, recorder)
        with _counting(counts):
            counts.active = True
            runs = work(recorder)
            counts.active = False
    per_run = {p: round(n / runs, 2) for p, n in sorted(counts.statements.items())}
    xacts = {p: round(n / runs, 2) for p, n in sorted(counts.transactions.items())}
    statements, transactions = sum(counts.statements.values()), sum(counts.transactions.values())
    return {
        "benchmark": "statements",
        "councils": councils,
        "runs": runs,
        "statements_per_run": round(statements / runs, 2),
        "transactions_per_run": round(transactions / runs, 2),
        "round_trips_per_run": round((statements + 2 * transactions) / runs, 2),
        "statements_by_phase_per_run": per_run,
        "transactions_by_phase_per_run": xacts,
        "named_per_run": {
            f"{phase} | {name}": round(n / runs, 2) for (phase, name), n in sorted(counts.named.items())
        },
        # The backend's CPU for each statement and COMMIT (its /proc schedstat before and after;
        # the server on this machine), ms a run, largest first.
        "server_cpu_ms_per_run": round(1000 * sum(counts.server.values()) / runs, 2),
        "named_server_cpu_ms_per_run": dict(
            (f"{phase} | {name}", round(1000 * s / runs, 3))
            for (phase, name), s in sorted(counts.server.items(), key=lambda item: -item[1])
        ),
        # The wait for each statement's answer (round trip, planning, execution), ms a run:
        # single-threaded, so it is close to the server's time for it.
        "named_wait_ms_per_run": {
            f"{phase} | {name}": round(1000 * s / runs, 3)
            for (phase, name), s in sorted(counts.wall.items(), key=lambda item: -item[1])
        },
        "server": server,
        "ok": True,  # no target: a count
    }
