"""Running one agent CLI: its own process group, a hard deadline, nothing left behind.

The CLI runs under the guard (``guard.py``), a session leader whose lifeline is
a pipe held only by this process: whatever ends this process — a return, an
exception, Celery's time limit, SIGTERM, SIGKILL — closes the pipe and the
guard kills the group. On the way out this process also kills the group
itself (leftover children of a CLI that exited go with it). While it runs, a
``watch`` callback may stop it (the turn limit of a CLI without its own).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

GUARD = Path(__file__).with_name("guard.py")
POLL_S = 0.05


@dataclass(frozen=True)
class Finished:
    exit_code: int | None  # None when it was stopped
    stopped: str | None  # "deadline", or the reason a watch gave
    elapsed_s: float
    pid: int  # the guard's, which is the process group's id


def run_guarded(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    deadline_s: float,
    stdout: Path,
    stderr: Path,
    watch: Callable[[], str | None] | None = None,
    started: Callable[[int], None] | None = None,
    pass_fds: Sequence[int] = (),
) -> Finished:
    """Run ``argv`` to its end or until ``deadline_s`` passes or ``watch`` names a reason;
    ``pass_fds``: descriptors the command inherits (the sandbox's channel to the proxy)."""
    begin = time.monotonic()
    passed = [arg for fd in pass_fds for arg in ("--pass-fd", str(fd))]
    with stdout.open("wb") as out, stderr.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-I", str(GUARD), *passed, "--", *argv],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    try:
        if started is not None:
            started(proc.pid)
        while True:
            try:
                code = proc.wait(timeout=POLL_S)
                return Finished(code, None, time.monotonic() - begin, proc.pid)
            except subprocess.TimeoutExpired:
                pass
            reason = watch() if watch is not None else None
            if reason is None and time.monotonic() - begin > deadline_s:
                reason = "deadline"
            if reason is not None:
                kill_group(proc.pid)
                proc.wait(10)
                return Finished(None, reason, time.monotonic() - begin, proc.pid)
    finally:
        kill_group(proc.pid)
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
