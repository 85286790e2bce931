"""Shared benchmark harness: a fresh migrated database, and racing processes.

``bench_database()`` uses the first admin URL set among ``ADMIN_URL_ENVS``,
else an embedded pgserver started (and deleted) for the benchmark alone.
``race()`` starts one spawn-context process per argument set (or forkserver, for
the tests), lets each prepare untimed, then releases them together at one moment
of the clock and collects their answers. ``smoke()`` and ``sized()`` give every
benchmark its tiny shape when ``COUNCIL_BENCH_SMOKE`` is set.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import Any, TypeVar

from council.config import redact_url
from tests.engines import dispose_all

ADMIN_URL_ENVS = ("COUNCIL_BENCH_DATABASE_URL", "COUNCIL_TEST_DATABASE_URL")
# The release moment is this far after the Event is set: waking the contenders
# blocked on one Event is serial (each re-takes the Event's lock in turn), and
# on a loaded machine takes tenths of a second; asleep until the moment, the
# contenders start together instead, outside the timed window.
RELEASE_MARGIN_S = 0.5
SMOKE_ENV = "COUNCIL_BENCH_SMOKE"
T = TypeVar("T")


def smoke() -> bool:
    """Whether this is a smoke run (``COUNCIL_BENCH_SMOKE=1``, or ``python -m benchmarks NAME
    --smoke``): every benchmark at a tiny size, to show that it still runs end to end and
    prints its document. Its figures measure nothing and are never recorded."""
    return os.environ.get(SMOKE_ENV, "").strip() not in ("", "0")


def sized(full: T, tiny: T) -> T:
    """``full`` in a real run, ``tiny`` in a smoke run (:func:`smoke`)."""
    return tiny if smoke() else full


@contextmanager
def bench_database(revision: str = "head") -> Iterator[tuple[str, str]]:
    """A fresh database migrated to ``revision``, dropped afterwards: yields (its URL, the server's name).

    The server is the first admin URL of ``ADMIN_URL_ENVS`` that is set, else an
    embedded pgserver started (and deleted) for this benchmark alone.
    """
    # Imported here, not at the top: every spawned contender imports this
    # module, and alembic and the schema tooling only slow them down.
    from council.ledger.migrate import upgrade
    from tests.migrations.schema_dump import create_database, drop_database, embedded_postgres, server_version

    admin = next((os.environ[name] for name in ADMIN_URL_ENVS if os.environ.get(name)), None)
    with ExitStack() as stack:
        if admin is None:
            admin = stack.enter_context(embedded_postgres())
            server = f"embedded pgserver {server_version(admin) // 10000}"
        else:
            server = redact_url(admin)
        name = f"council_bench_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        url = create_database(admin, name)
        stack.callback(drop_database, admin, name)
        stack.callback(dispose_all)
        upgrade(url, revision)
        yield url, server


@dataclass(frozen=True)
class Race:
    results: list[Any]  # one per contender, in order; None where it raised
    errors: list[str]  # tracebacks of contenders that raised after the release
    ready_s: float  # from the first start until every contender was prepared and waiting
    elapsed_s: float  # from the release moment until the last contender had its answer
    exitcodes: list[int | None]
    release_lag_s: float = 0.0  # how late after the release moment the last contender began


class RaceAborted(RuntimeError):
    """A contender failed or vanished before the release: there was no race."""


def race(
    prepare: Callable[..., Callable[[], Any]],
    argsets: Sequence[tuple[Any, ...]],
    *,
    timeout: float = 240.0,
    start_method: str = "spawn",
) -> Race:
    """Start one spawned process per argument tuple, let each run ``prepare(*args)``
    (connect, build its data) untimed, then release them all at once — one Event
    names a moment of the wall clock, a little ahead, which every contender sleeps
    until — and collect what each prepared action returns and when it had it.
    ``timeout`` bounds the whole race; a contender never released gives up after it too.

    ``prepare`` must be a module-level function (spawn pickles it by name) and
    return a zero-argument callable; results must be picklable. ``start_method``
    "forkserver" forks each contender from one server process that imported its
    modules once (``tests.processes.RACE_START_METHOD``): still a process of its
    own, which connects on its own, without an interpreter's start-up each.
    """
    ctx = mp.get_context(start_method)
    ready: Queue[tuple[int, str | None]] = ctx.Queue()
    answers: Queue[tuple[int, Any, str | None, float, float]] = ctx.Queue()
    go = ctx.Event()
    release_at = ctx.Value("d", 0.0, lock=False)  # written once, before go is set
    procs = [
        ctx.Process(
            target=_contender,
            args=(i, prepare, args, ready, go, release_at, answers, timeout),
            name=f"contender-{i}",
            daemon=True,
        )
        for i, args in enumerate(argsets)
    ]
    deadline = time.monotonic() + timeout
    started = time.perf_counter()
    finished = False
    try:
        for proc in procs:
            proc.start()
        failures = [f"contender {i}: {error}" for i, error in _collect(ready, procs, deadline) if error]
        if failures:
            raise RaceAborted("\n".join(failures))
        ready_s = time.perf_counter() - started
        release_at.value = time.time() + RELEASE_MARGIN_S
        go.set()
        answered = _collect(answers, procs, deadline)
        finished = True
    finally:
        for proc in procs:
            if finished:
                proc.join(30)
            if proc.is_alive():
                proc.kill()
                proc.join()
    results: list[Any] = [None] * len(procs)
    errors = []
    for i, result, error, _, _ in answered:
        results[i] = result
        if error:
            errors.append(f"contender {i}: {error}")
    elapsed_s = max(done for *_, done in answered) - release_at.value
    release_lag_s = max(began for *_, began, _ in answered) - release_at.value
    exitcodes = [proc.exitcode for proc in procs]
    return Race(results, errors, ready_s, elapsed_s, exitcodes, max(release_lag_s, 0.0))


def _collect(source: Queue[Any], procs: list[Any], deadline: float) -> list[Any]:
    """One message per contender, in contender order (each message starts with
    the contender's index). A contender that exits without one, or a deadline
    that passes, is an error rather than a hang."""
    got: dict[int, Any] = {}
    exited: dict[int, float] = {}
    while len(got) < len(procs):
        try:
            message = source.get(timeout=0.25)
        except queue.Empty:
            now = time.monotonic()
            if now > deadline:
                raise RaceAborted(f"only {len(got)} of {len(procs)} contenders answered in time") from None
            for i, proc in enumerate(procs):
                if i not in got and proc.exitcode is not None:
                    exited.setdefault(i, now)
            # A message put just before a normal exit may still be in the pipe.
            silent = {i: procs[i].exitcode for i, t in exited.items() if i not in got and now - t > 2}
            if silent:
                raise RaceAborted(f"contenders exited without answering (exit codes {silent})") from None
            continue
        got[message[0]] = message
    return [got[i] for i in range(len(procs))]


def _contender(
    index: int,
    prepare: Callable[..., Callable[[], Any]],
    args: tuple[Any, ...],
    ready: Queue[tuple[int, str | None]],
    go: Event,
    release_at: Any,
    answers: Queue[tuple[int, Any, str | None, float, float]],
    timeout: float,
) -> None:
    try:
        try:
            act = prepare(*args)
        except BaseException:
            ready.put((index, traceback.format_exc()))
            return
        ready.put((index, None))
        if not go.wait(timeout):
            return
        time.sleep(max(0.0, release_at.value - time.time()))
        began = time.time()  # the wall clock: one for every process of the machine
        try:
            result, error = act(), None
        except BaseException:
            result, error = None, traceback.format_exc()
        answers.put((index, result, error, began, time.time()))
    finally:
        dispose_all()


def postgres_cpu_s(engine: Any) -> float:
    """CPU seconds so far of the backends connected to ``engine``'s database (psutil; pooled
    backends are long-lived, so the difference of two readings is what they spent between)."""
    import psutil
    from sqlalchemy import text

    total = 0.0
    with engine.connect() as conn:
        pids = list(
            conn.execute(
                text("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
            ).scalars()
        )
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        total += times.user + times.system
    return total


def server_cpu_s(engine: Any) -> float | None:
    """CPU seconds so far of the whole Postgres server behind ``engine``: its postmaster,
    every process it has now, and every one that has exited (the postmaster reaps its
    backends, and the kernel adds their CPU to its children's). Unlike
    :func:`postgres_cpu_s` this keeps what a backend spent after its connection closed: a
    pool that opens and closes connections (overflow beyond its size) would otherwise hide
    the CPU of every backend it closed. It counts the server's own processes (WAL writer,
    checkpointer) too, so it belongs to a machine running one benchmark. None when the
    server is not a process this machine can read (a remote server)."""
    import psutil
    from sqlalchemy import text

    with engine.connect() as conn:
        backend = int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())
    try:
        postmaster = psutil.Process(psutil.Process(backend).ppid())
        own = postmaster.cpu_times()
        total = own.user + own.system + own.children_user + own.children_system
        children = postmaster.children()
    except (psutil.Error, OSError):
        return None
    for child in children:
        try:
            times = child.cpu_times()
        except (psutil.Error, OSError):
            continue  # exited since the postmaster's reading: its CPU shows in the next reading
        total += times.user + times.system
    return float(total)


def postgres_cpu_reader(engine: Any) -> tuple[Callable[[], float], str]:
    """A reading of Postgres's CPU seconds so far and what it covers, chosen once so that
    both ends of a difference read the same thing: the whole server when it is a process
    of this machine (:func:`server_cpu_s`), else the database's live backends
    (:func:`postgres_cpu_s`)."""
    if server_cpu_s(engine) is None:
        return (lambda: postgres_cpu_s(engine)), "the benchmark database's backends alive at each reading"

    def whole_server() -> float:
        reading = server_cpu_s(engine)
        if reading is None:
            raise RuntimeError("the Postgres server's processes could no longer be read")
        return reading

    return whole_server, "the Postgres server's processes, exited backends included"


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds a process on this machine has used (None when it cannot be read)."""
    import psutil

    try:
        times = psutil.Process(pid).cpu_times()
    except (psutil.Error, OSError):
        return None
    return float(times.user + times.system)
