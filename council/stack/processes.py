"""The processes `council up` supervises, and how the stack starts, stops and reads them.

One Celery worker per queue (``council worker --queues Q``), the beat
scheduler (``celery -A council.workers.app beat``: council.workers.app holds its schedule) and,
when the ``serve`` command is installed, the HTTP API and live page on
127.0.0.1 at the port `up` chose (:func:`choose_web_port`: ``COUNCIL_WEB_PORT``,
which must be free, else 8787 when free, else any free port) and recorded in the
state file. With ``COUNCIL_METRICS_PORT`` set, the
workers serve their metrics on that port and the next ones, one each. They run under one supervisor process
(``council/stack/supervisor.py``), detached from the shell that ran ``up``;
it writes ``<home>/supervisor.json`` (the only writer while it runs) and logs
to ``<home>/logs/``.

Every child leads its own process group (a new session), so a worker's pool
children go with it. Only processes of those groups, carrying this home in
their environment, are ever signalled. Their files are private (umask 077,
``council/files.py``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict, cast

import psutil

from council import config
from council.config import ComponentRecord
from council.errors import StackError
from council.files import PRIVATE_UMASK, private_dir, private_tree, write_private
from council.settings import child_environment, settings
from council.stack import environment

WEB_HOST = "127.0.0.1"
WEB_PORT_ENV = "COUNCIL_WEB_PORT"
DEFAULT_WEB_PORT = 8787
SUPERVISOR = "supervisor"
STATE_FILE = "supervisor.json"
# queue, pool, size: runs mostly wait on model APIs, so one process waits on eight with
# threads (a council of three runs at once); evaluations serialize on node locks anyway.
WORKER_QUEUES = (("runs", "threads", 8), ("commit", "prefork", 1), ("maintenance", "prefork", 1))
_START_TIMEOUT_S = 20
_WEB_TIMEOUT_S = 60  # `council serve` imports the web stack before it binds
_STOP_TIMEOUT_S = 60  # the supervisor gives its children a warm shutdown first


METRICS_PORT_ENV = "COUNCIL_METRICS_PORT"  # read by council/workers/metrics_server.py


class ChildRecord(TypedDict, total=False):
    """A supervised process as the supervisor records it in ``STATE_FILE`` (every key;
    read back from the file, none is counted on)."""

    pid: int | None
    started: float | None  # its create_time
    state: str
    restarts: int
    last_exit_code: int | None
    last_exit_at: str | None


class ProcessFile(TypedDict, total=False):
    """The supervisor's ``STATE_FILE``: its pid, start time and children (empty: none is
    recorded, or the file is unreadable)."""

    pid: int
    started: float
    children: dict[str, ChildRecord]


@dataclass(frozen=True)
class ProcessSpec:
    name: str
    argv: tuple[str, ...]
    url: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)  # on top of child_env()


def specs(home: Path) -> tuple[ProcessSpec, ...]:
    council = (sys.executable, "-m", "council.cli")
    metrics = settings().metrics_port
    found: list[ProcessSpec] = []
    for i, (queue, pool, size) in enumerate(WORKER_QUEUES):
        pool_args = ("--pool", pool, "--concurrency", str(size))
        argv = (*council, "worker", "--queues", queue, *pool_args, "--name", f"{queue}@%h")
        env = {METRICS_PORT_ENV: str(metrics + i)} if metrics is not None else {}
        found.append(ProcessSpec(f"worker-{queue}", argv, env=env))
    schedule = str(home / "celerybeat-schedule")
    found.append(
        ProcessSpec(
            "beat",
            (
                sys.executable,
                "-m",
                "celery",
                "-A",
                "council.workers.app",
                "beat",
                "-s",
                schedule,
                "-l",
                "INFO",
            ),
        )
    )
    if importlib.util.find_spec("council.cli.serve_cmd") is not None:
        port = web_port()
        serve = (*council, "serve", "--host", WEB_HOST, "--port", str(port or DEFAULT_WEB_PORT))
        found.append(ProcessSpec("web", serve, url=web_url(port) if port else None))
    return tuple(found)


def web_port() -> int | None:
    """The port `up` chose for the web server (in the state file); None while down."""
    port = (config.read_state() or {}).get("web_port")
    return port if isinstance(port, int) else None


def choose_web_port(home: Path) -> int:
    """The running web server's port; else ``COUNCIL_WEB_PORT``, refused when another
    process holds it; else 8787 when free, else any free port."""
    explicit = settings().web_port
    state = read(home)
    running = web_port() if alive(state.get("pid"), state.get("started")) else None
    if running is not None:
        if explicit is not None and explicit != running:
            raise StackError(
                f"the stack already serves on port {running}; `council down` first to move it to "
                f"{WEB_PORT_ENV}={explicit}"
            )
        return running
    if explicit is not None:
        if not is_free(WEB_HOST, explicit):
            raise StackError(
                f"{WEB_HOST}:{explicit} ({WEB_PORT_ENV}) is taken by another process: "
                f"stop it or choose another port"
            )
        return explicit
    return free_port(WEB_HOST, DEFAULT_WEB_PORT)


def free_port(host: str, preferred: int | None) -> int:
    """``preferred`` when nothing listens there, else a free port the system picks."""
    if preferred is not None and is_free(host, preferred):
        return preferred
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As Redis and uvicorn do: a port lingering in TIME_WAIT after our last `down` is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def web_url(port: int) -> str:
    return f"http://{WEB_HOST}:{port}/"


def child_env(home: Path) -> dict[str, str]:
    """The supervisor's environment, with the home and the stack's URLs made explicit
    (beat reads the broker from the environment; see council.workers.app)."""
    env = child_environment(COUNCIL_HOME=str(home), PYTHONUNBUFFERED="1")
    for variable, url in (
        ("COUNCIL_DATABASE_URL", config.database_url(required=False)),
        ("COUNCIL_BROKER_URL", config.broker_url(required=False)),
    ):
        if url:
            env[variable] = url
    return env


def log_dir(home: Path) -> Path:
    return home / "logs"


def read(home: Path) -> ProcessFile:
    try:
        data = json.loads((home / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return cast(ProcessFile, data) if isinstance(data, dict) else {}  # as the supervisor wrote it


def write(home: Path, data: ProcessFile) -> None:
    write_private(home / STATE_FILE, json.dumps(data, indent=2, sort_keys=True))


def alive(pid: int | None, started: float | None) -> bool:
    """Is ``pid`` still the process that was started at ``started`` (not a recycled pid)?"""
    if pid is None or started is None:
        return False
    try:
        process = psutil.Process(pid)
        return bool(process.status() != psutil.STATUS_ZOMBIE and abs(process.create_time() - started) < 1)
    except psutil.Error:
        return False


def alive_supervisor(home: Path) -> bool:
    state = read(home)
    return alive(state.get("pid"), state.get("started"))


def start(home: Path) -> dict[str, ComponentRecord]:
    """Start the supervisor unless one runs; wait until it has started every child.

    Returns ``{name: record}`` for the supervisor and each child, with ``reused``.
    """
    state = read(home)
    reused = alive(state.get("pid"), state.get("started"))
    if not reused:
        kill_leftovers(home, state)
        logs = private_dir(log_dir(home))
        private_tree(logs)  # logs an older release left readable
        log_path = logs / f"{SUPERVISOR}.log"
        with os.fdopen(os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "council.stack.supervisor"],
                env=child_environment(COUNCIL_HOME=str(home)),
                cwd=home,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                umask=PRIVATE_UMASK,  # inherited by everything it starts
            )
        state = _await_children(home, process)
        environment.record(home, environment.current(home))
    records = report(home, state)
    for record in records.values():
        record["reused"] = reused
    return records


def _await_children(home: Path, process: subprocess.Popen[bytes]) -> ProcessFile:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        state = read(home)
        children = state.get("children", {})
        if state.get("pid") == process.pid and children and all(c.get("pid") for c in children.values()):
            return state
        if process.poll() is not None:
            break
        time.sleep(0.1)
    log = log_dir(home) / f"{SUPERVISOR}.log"
    raise StackError(f"the stack supervisor did not start its processes; see {log}")


def await_web(home: Path, port: int, restarts: int = 0) -> None:
    """Wait until the supervised web server itself listens on ``port``: a URL is printed
    only when the page behind it is ours, never another server's on the same port.
    ``restarts``: how often it had been restarted before (an exit since is a failure)."""
    log = log_dir(home) / "web.log"
    deadline = time.monotonic() + _WEB_TIMEOUT_S
    while time.monotonic() < deadline:
        web: ChildRecord = read(home).get("children", {}).get("web", {})
        pid = web.get("pid")
        if pid is not None and alive(pid, web.get("started")) and _listens(pid, port):
            return
        if web.get("restarts", 0) > restarts:
            raise StackError(f"the web server could not serve on {WEB_HOST}:{port}: {_last_line(log)}")
        time.sleep(0.2)
    raise StackError(f"the web server did not listen on {WEB_HOST}:{port} in {_WEB_TIMEOUT_S} s; see {log}")


def _listens(pid: int, port: int) -> bool:
    try:
        connections = psutil.Process(pid).net_connections(kind="tcp")
    except psutil.Error:
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in connections)


def _last_line(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return f"see {log}"
    return f"{lines[-1].strip()} (see {log})" if lines else f"see {log}"


def stop(home: Path) -> dict[str, ComponentRecord]:
    """SIGTERM the supervisor (it stops its children, then exits); if it is gone or
    stuck, kill what is left of its children's process groups."""
    state = read(home)
    before = report(home, state)
    if before[SUPERVISOR]["running"]:
        process = psutil.Process(state["pid"])
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=_STOP_TIMEOUT_S)
        except psutil.TimeoutExpired:
            process.kill()
    state = read(home) or state
    kill_leftovers(home, state)
    (home / STATE_FILE).unlink(missing_ok=True)
    return {
        name: {"stopped": entry["running"], "pid": entry["pid"], "log": entry["log"]}
        for name, entry in before.items()
    }


def kill_leftovers(home: Path, state: ProcessFile) -> None:
    """SIGKILL every process still in one of the children's groups that carries this
    home in its environment (a recycled group id does not)."""
    groups = {c["pid"] for c in state.get("children", {}).values() if c.get("pid")}
    if not groups:
        return
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) in groups and process.environ().get("COUNCIL_HOME") == str(home):
                process.kill()
        except (psutil.Error, ProcessLookupError):
            continue


def report(home: Path, state: ProcessFile | None = None) -> dict[str, ComponentRecord]:
    """``{name: {"running", "pid", "started_by_us", "external", "state", "log", ...}}`` for
    the supervisor and each child it runs (or would run), with ``restarts``,
    ``last_exit_code`` (negative: killed by that signal), ``last_exit_at`` and
    ``url`` per child."""
    state = read(home) if state is None else state
    supervised = alive(state.get("pid"), state.get("started"))
    logs = log_dir(home)
    result = {SUPERVISOR: _entry(state, "running" if supervised else "stopped", logs / f"{SUPERVISOR}.log")}
    children = state.get("children", {})
    for spec in specs(home):
        child: ChildRecord = children.get(spec.name, {})
        entry = _entry(child, child.get("state", "stopped"), logs / f"{spec.name}.log")
        if not supervised:
            entry["state"] = "unsupervised" if entry["running"] else "stopped"
        result[spec.name] = entry | {
            "restarts": child.get("restarts", 0),
            "last_exit_code": child.get("last_exit_code"),
            "last_exit_at": child.get("last_exit_at"),
            "url": spec.url,
        }
    return result


def _entry(record: ProcessFile | ChildRecord, state: str, log: Path) -> ComponentRecord:
    running = alive(record.get("pid"), record.get("started"))
    return {
        "running": running,
        "pid": record.get("pid") if running else None,
        "started_by_us": running,
        "external": False,
        "state": state,
        "log": str(log),
    }


def stop_process(pid: int, sig: signal.Signals, what: str, *, timeout_s: float) -> None:
    """Send ``sig`` to a process the stack started and wait until it has exited."""
    try:
        process = psutil.Process(pid)
        os.kill(pid, sig)
        process.wait(timeout=timeout_s)
    except (psutil.NoSuchProcess, ProcessLookupError):
        pass  # already gone
    except psutil.TimeoutExpired as exc:
        raise StackError(f"{what} (pid {pid}) did not stop within {timeout_s:g} s") from exc
