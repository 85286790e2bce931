"""Where a process's CPU goes, thread by thread and library by library (Linux).

Two readings, combined by :func:`breakdown`:

- exact CPU per OS thread: ``utime + stime`` of ``/proc/PID/task/TID/stat``, read before
  and after (:func:`thread_cpu_s`); the process's own ``/proc/PID/stat`` (its threads,
  the ones that exited included, and its reaped children) is the total
  (:func:`process_cpu_s`); what the threads alive at both readings do not account for
  spent threads that started or ended in between;
- samples of the Python stack of the thread holding the GIL, by py-spy (``record --gil
  --threads --format raw --full-filenames``, idle threads left out, :func:`recording`),
  which name each thread's role (what its stacks run) and, within a role, which library
  the CPU is in. Without ``--gil`` py-spy counts a thread blocked in a socket read
  (psycopg's ``Connection.wait``, redis's ``_read_from_socket``) as running on this
  machine, and those waits then took most samples; the GIL holder is the thread that
  runs Python. What a thread spends with the GIL released (libpq, the kernel's side of
  its sockets) is in its exact CPU but charged to libraries in the proportions of its
  GIL samples.

A sample is charged to the innermost frame that is not the standard library (json,
logging, threading, socket… are charged to the library that called them), so
``by_library`` says whose work it is; ``by_module`` names the innermost frame's module
itself (stdlib included). Native code without Python frames (the garbage collector
among it) is charged to the Python frame that was running when it ran.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK")
_LINE = re.compile(r"^thread \((\d+)\)(?:: ?([^;]*))?;?(.*?) ?(\d+)$")
_FRAME = re.compile(r"^(.*) \((.*):(\d+)\)$")
_STDLIB = sysconfig.get_paths()["stdlib"]
# Package (first path component under site-packages) → the library it is reported as.
LIBRARIES = {
    "celery": "celery/kombu",
    "kombu": "celery/kombu",
    "billiard": "celery/kombu",
    "vine": "celery/kombu",
    "amqp": "celery/kombu",
    "redis": "redis",
    "psycopg": "psycopg",
    "psycopg_pool": "psycopg",
    "sqlalchemy": "sqlalchemy",
    "litellm": "litellm",
    "openai": "openai SDK",
    "httpx": "httpx/httpcore",
    "httpcore": "httpx/httpcore",
    "h11": "httpx/httpcore",
    "anyio": "httpx/httpcore",
    "pydantic": "pydantic",
    "pydantic_core": "pydantic",
    "tiktoken": "tiktoken",
    "prometheus_client": "prometheus",
    "council": "council",
    "workers": "council",
    "langgraph": "langgraph",
    "langchain_core": "langgraph",
    "psutil": "psutil",
}
# Thread roles, from what a thread's stacks run (first match wins).
RUN_THREADS = "run threads (the task pool: the run itself)"
ROLES = (
    (RUN_THREADS, ("celery/app/trace.py", "council/services/execution.py")),
    ("celery main thread (consumer, event loop, timers)", ("celery/worker/", "kombu/", "celery/bootsteps")),
    ("litellm's own threads (logging, callbacks, cost)", ("litellm/",)),
    ("kombu/redis threads", ("redis/", "kombu/")),
)


def _stat_fields(path: Path) -> list[str] | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # after "pid (comm) "


def process_cpu_s(pid: int) -> float:
    """utime + stime of a process (every thread it ever had) and its reaped children, in
    seconds, plus its live children's."""
    fields = _stat_fields(Path(f"/proc/{pid}/stat"))
    if fields is None:
        return 0.0
    total = sum(int(fields[i]) for i in (11, 12, 13, 14)) / _TICK  # utime stime cutime cstime
    children = Path(f"/proc/{pid}/task/{pid}/children")
    for child in children.read_text().split() if children.exists() else ():
        total += process_cpu_s(int(child))
    return total


def user_system_s(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process, its exited threads included."""
    fields = _stat_fields(Path(f"/proc/{pid}/stat"))
    return (int(fields[11]) / _TICK, int(fields[12]) / _TICK) if fields else (0.0, 0.0)


def thread_cpu_s(pid: int) -> dict[int, float]:
    """CPU seconds each live thread of ``pid`` has used: {tid: utime + stime}."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        fields = _stat_fields(task / "stat")
        if fields is not None:
            found[int(task.name)] = (int(fields[11]) + int(fields[12])) / _TICK
    return found


def thread_count(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/task").iterdir()))


def py_spy() -> str | None:
    """The py-spy executable: beside this interpreter (a venv's), else on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


@contextmanager
def recording(pid: int, out: Path, rate: int) -> Iterator[subprocess.Popen[bytes]]:
    """py-spy samples every thread of ``pid`` (not the idle ones) ``rate`` times a second
    without pausing it, until the block ends (then it writes ``out``)."""
    exe = py_spy()
    if exe is None:
        raise RuntimeError("py-spy is not installed: pip install -e '.[profile]'")
    argv = [exe, "record", "--pid", str(pid), "--threads", "--format", "raw", "--full-filenames"]
    argv += ["--rate", str(rate), "--nonblocking", "--gil", "--output", str(out)]
    with (out.parent / f"{out.name}.log").open("wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass(frozen=True)
class Stack:
    tid: int
    thread: str
    frames: tuple[tuple[str, str], ...]  # (function, file), outermost first
    count: int


def parse_raw(text: str) -> list[Stack]:
    """py-spy's raw output with ``--threads``: ``thread (TID): NAME;frame;… COUNT``."""
    stacks = []
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        tid, name, rest, count = match.groups()
        name = name or ""
        frames = []
        for part in rest.split(";") if rest else []:
            frame = _FRAME.match(part)
            frames.append((frame.group(1), frame.group(2)) if frame else (part, ""))
        stacks.append(Stack(int(tid), name, tuple(frames), int(count)))
    return stacks


def library_of(path: str) -> str | None:
    """The library a source file belongs to; None for the standard library."""
    if "site-packages/" in path:
        package = path.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
        return LIBRARIES.get(package, package)
    if path.startswith(_STDLIB):
        return None
    for package in ("council", "workers", "benchmarks", "tests"):
        if f"/{package}/" in path:
            return "council"
    return "other"


def module_of(path: str) -> str:
    """The innermost frame's module, short: a library, or ``stdlib:json``…"""
    library = library_of(path)
    if library is not None:
        return library
    relative = path[len(_STDLIB) :].lstrip("/")
    return "stdlib:" + relative.split("/", 1)[0].removesuffix(".py")


def charged_to(frames: tuple[tuple[str, str], ...]) -> str:
    """The innermost frame's library that is not the standard library."""
    for _, path in reversed(frames):
        library = library_of(path)
        if library is not None:
            return library
    return f"stdlib only ({module_of(frames[-1][1])})" if frames else "no Python frame"


def role_of(name: str, stacks: list[Stack]) -> str:
    text = "\n".join(path for s in stacks for _, path in s.frames)
    for role, markers in ROLES:
        if any(marker in text for marker in markers):
            return role
    return f"other threads ({name or 'unnamed'})" if name != "MainThread" else "main thread (other)"


def by_step(
    stacks: list[Stack], role: str, role_ms: float, steps: tuple[tuple[str, str, str], ...]
) -> dict[str, float]:
    """The ``role`` threads' ``role_ms`` split by step, in the proportions of their samples: a
    sample is the first step (label, function — a method's name matches ``Class.name`` —,
    path fragment) with a frame on its stack, else
    ``other``. Stacks py-spy could not unwind to the task are ``other`` too."""
    per_tid: dict[int, list[Stack]] = defaultdict(list)
    for stack in stacks:
        per_tid[stack.tid].append(stack)
    counts: Counter[str] = Counter()
    for found in per_tid.values():
        if role_of(found[0].thread, found) != role:
            continue
        for stack in found:
            label = next(
                (
                    label
                    for label, function, fragment in steps
                    if any(
                        (f == function or f.endswith("." + function)) and fragment in path
                        for f, path in stack.frames
                    )
                ),
                "other",
            )
            counts[label] += stack.count
    total = sum(counts.values())
    return {k: round(role_ms * n / total, 3) for k, n in counts.most_common()} if total else {}


def breakdown(
    stacks: list[Stack],
    cpu_before: dict[int, float],
    cpu_after: dict[int, float],
    total_s: float,
    runs: int,
) -> dict[str, Any]:
    """The process's ``total_s`` of CPU over ``runs`` runs, in ms a run: by thread role
    (exact per-thread CPU; the CPU of threads not alive at both readings shared by their
    samples) and by library within each role (by its samples). The roles add up to the
    total; so do the libraries."""
    per_tid: dict[int, list[Stack]] = defaultdict(list)
    names: dict[int, str] = {}
    for stack in stacks:
        per_tid[stack.tid].append(stack)
        names[stack.tid] = stack.thread
    role = {tid: role_of(names[tid], found) for tid, found in per_tid.items()}
    exact: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    for tid, after in cpu_after.items():
        spent = after - cpu_before.get(tid, 0.0)
        name = role.get(tid, "threads never sampled (idle)")
        exact[name] += spent
        threads[name] += 1
    # Threads that exited (or started and exited) between the readings: the rest of the
    # total, shared by the samples of threads not alive at the second reading.
    rest = max(0.0, total_s - sum(exact.values()))
    gone = Counter({role[t]: sum(s.count for s in per_tid[t]) for t in per_tid if t not in cpu_after})
    if rest > 0 and sum(gone.values()):
        for name, count in gone.items():
            exact[name] += rest * count / sum(gone.values())
    elif rest > 0:
        exact["threads gone before the second reading (unsampled)"] += rest
    samples = Counter({name: 0 for name in exact})
    libraries: dict[str, Counter[str]] = defaultdict(Counter)
    modules: Counter[str] = Counter()
    for tid, found in per_tid.items():
        for stack in found:
            samples[role[tid]] += stack.count
            libraries[role[tid]][charged_to(stack.frames)] += stack.count
            if stack.frames:
                modules[module_of(stack.frames[-1][1])] += stack.count

    def ms(seconds: float) -> float:
        return round(1000 * seconds / runs, 3)

    by_library: Counter[str] = Counter()
    by_role_library: dict[str, dict[str, float]] = {}
    for name, seconds in exact.items():
        counted = sum(libraries[name].values())
        shares = {lib: seconds * n / counted for lib, n in libraries[name].items()} if counted else {}
        if not counted:
            shares = {"unsampled": seconds}
        by_library.update(shares)
        by_role_library[name] = {lib: ms(s) for lib, s in sorted(shares.items(), key=lambda kv: -kv[1])}
    sampled = sum(modules.values())
    return {
        "total_cpu_ms_per_run": ms(total_s),
        "by_thread_ms_per_run": {k: ms(v) for k, v in sorted(exact.items(), key=lambda kv: -kv[1])},
        "threads_by_role": dict(threads),
        "by_library_ms_per_run": {k: ms(v) for k, v in sorted(by_library.items(), key=lambda kv: -kv[1])},
        "by_thread_and_library_ms_per_run": by_role_library,
        # The innermost frame's module, stdlib included: a share of the samples.
        "by_innermost_module_share": {
            k: round(n / sampled, 4) for k, n in modules.most_common(20) if sampled
        },
        "samples": sum(samples.values()),
    }
