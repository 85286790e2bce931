"""The stack supervisor: ``python -m council.stack.supervisor``, started detached by `council up`.

It starts every process of ``council.processes.specs`` in its own
process group, logging to ``<home>/logs/<name>.log``, and restarts one that
exits, after a bounded backoff (1 s, doubling per quick successive failure, at
most 30 s; a process that ran a minute starts again from 1 s). Each exit is a
log line here and a ``restarts`` / ``last_exit_code`` entry in
``<home>/supervisor.json``, which `council status` reads. On SIGTERM it gives
its children a warm shutdown, kills what is left of their groups, and exits.

Leftovers of a crashed child (a worker's pool processes) are killed while the
child is still an unreaped zombie: its pid, which is also its group id, cannot
be handed to another process until then.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

import psutil

from council import config
from council.files import PRIVATE_UMASK
from council.stack import processes
from council.stack.processes import ProcessSpec

BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
STABLE_S = 60.0  # ran this long: its next exit is a first failure again
STOP_GRACE_S = 20.0
TICK_S = 0.2

log = logging.getLogger("council.supervisor")


@dataclass
class Child:
    spec: ProcessSpec
    process: subprocess.Popen[bytes] | None = None
    started: float | None = None  # the process's create_time
    started_mono: float = 0.0
    restarts: int = 0
    failures: int = 0  # quick successive exits, for the backoff
    last_exit_code: int | None = None
    last_exit_at: str | None = None
    next_start: float = 0.0
    state: str = "starting"  # then running | backoff | stopped
    pid: int | None = None


class Supervisor:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.children = [Child(spec) for spec in processes.specs(home)]
        self.started = psutil.Process().create_time()
        self.stopping = False

    def run(self) -> None:
        log.info("supervisor %d: %s", os.getpid(), ", ".join(c.spec.name for c in self.children))
        while not self.stopping:
            now = time.monotonic()
            for child in self.children:
                if child.process is None and now >= child.next_start:
                    self._start(child)
                elif child.process is not None and _exited(child.process):
                    self._reap(child, now)
            time.sleep(TICK_S)
        log.info("supervisor: stopping")
        self._stop_all()

    def request_stop(self, signum: int, _frame: FrameType | None) -> None:
        self.stopping = True  # logged by run(): a handler may interrupt a log call

    def _start(self, child: Child) -> None:
        logs = processes.log_dir(self.home)
        try:
            with (logs / f"{child.spec.name}.log").open("ab") as out:
                child.process = subprocess.Popen(
                    child.spec.argv,
                    env={**processes.child_env(self.home), **child.spec.env},
                    cwd=self.home,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        except OSError as exc:  # e.g. the interpreter was removed: try again after the backoff
            log.error("%s: could not start: %s", child.spec.name, exc)
            child.failures += 1
            child.next_start = time.monotonic() + _backoff(child.failures)
            child.state = "backoff"
            self.write_state()
            return
        child.pid = child.process.pid
        try:
            child.started = psutil.Process(child.pid).create_time()
        except psutil.Error:
            child.started = None  # already gone: the next tick reaps it
        child.started_mono = time.monotonic()
        child.state = "running"
        log.info("%s: started (pid %d)", child.spec.name, child.pid)
        self.write_state()

    def _reap(self, child: Child, now: float) -> None:
        """The child exited on its own: clear its group, record the exit, schedule a restart."""
        assert child.process is not None
        _kill_group(child.process.pid)
        code = child.process.wait()
        ran = now - child.started_mono
        child.failures = 1 if ran >= STABLE_S else child.failures + 1
        delay = _backoff(child.failures)
        child.process = None
        child.restarts += 1
        child.last_exit_code = code
        child.last_exit_at = datetime.now(UTC).isoformat()
        child.next_start = now + delay
        child.state = "backoff"
        log.warning(
            "%s: pid %d exited with %s after %.0f s; restart %d in %.0f s",
            child.spec.name,
            child.pid,
            _describe(code),
            ran,
            child.restarts,
            delay,
        )
        self.write_state()

    def _stop_all(self) -> None:
        running = [c for c in self.children if c.process is not None]
        for child in running:
            assert child.process is not None
            child.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline and not all(
            _exited(c.process) for c in running if c.process is not None
        ):
            time.sleep(TICK_S)
        for child in running:
            assert child.process is not None
            _kill_group(child.process.pid)
            code = child.process.wait()
            log.info("%s: pid %d stopped (%s)", child.spec.name, child.process.pid, _describe(code))
        for child in self.children:
            child.state = "stopped"
        self.write_state()

    def write_state(self) -> None:
        processes.write(
            self.home,
            {
                "pid": os.getpid(),
                "started": self.started,
                "children": {c.spec.name: _record(c) for c in self.children},
            },
        )


def _record(child: Child) -> processes.ChildRecord:
    return {
        "pid": child.pid,
        "started": child.started,
        "state": child.state,
        "restarts": child.restarts,
        "last_exit_code": child.last_exit_code,
        "last_exit_at": child.last_exit_at,
    }


def _backoff(failures: int) -> float:
    return min(MAX_BACKOFF_S, BACKOFF_S * 2.0 ** (failures - 1))


def _exited(process: subprocess.Popen[bytes]) -> bool:
    """Has it exited? Without reaping it (WNOWAIT), so its group id stays reserved."""
    if process.returncode is not None:
        return True
    try:
        found = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return found is not None


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # nothing left in the group
        os.killpg(pgid, signal.SIGKILL)


def _describe(code: int) -> str:
    if code >= 0:
        return f"code {code}"
    try:
        return f"signal {signal.Signals(-code).name}"
    except ValueError:
        return f"signal {-code}"


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    os.umask(PRIVATE_UMASK)  # logs, state and whatever the children write: private
    home = config.council_home()
    processes.log_dir(home).mkdir(parents=True, exist_ok=True)
    with (home / ".supervisor.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.error("another supervisor runs for %s", home)
            sys.exit(1)
        supervisor = Supervisor(home)
        signal.signal(signal.SIGTERM, supervisor.request_stop)
        signal.signal(signal.SIGINT, supervisor.request_stop)
        supervisor.write_state()
        supervisor.run()


if __name__ == "__main__":
    main()
