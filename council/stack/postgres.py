"""The embedded Postgres: the server shipped in the ``pgserver`` wheel.

Data lives under ``<home>/pgdata``. The server listens on a unix socket only
(pgserver starts it with ``-h ""``), so it never collides with a system
Postgres on 5432. As root, pgserver runs the server as the system user
``pgserver`` (created on first use) and opens read/traverse permissions on
every ancestor of the data directory so that user can reach it (the stack
closes the home again to traverse-only: ``council/files.py``).

Two URLs: the owner's (the superuser initdb created), which migrates, and the
application's, as ``council_app`` (migration 0007), which owns nothing and
cannot switch the ledger's triggers off. Both log in over the socket without a
password (initdb's trust); only the socket's owner (and root) may connect, so
the socket file is made 0700 whatever directory pgserver put it in.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import warnings
from pathlib import Path
from urllib.parse import quote

import psutil
import psycopg
from psycopg import sql

from council.errors import StackError
from council.stack.processes import stop_process

DATABASE = "council"
APP_ROLE = "council_app"  # created by migration 0007
_SUPERUSER = "postgres"  # the role pgserver's initdb creates
_SOCKET = ".s.PGSQL.5432"
_STOP_TIMEOUT_S = 60  # a fast shutdown still writes a checkpoint

# pgserver logs whole server logs at ERROR on failure; our StackError names the log file instead.
logging.getLogger("pgserver").addHandler(logging.NullHandler())


def data_dir(home: Path) -> Path:
    return home / "pgdata"


def running_pid(home: Path) -> int | None:
    live = _postmaster(home)
    return live[0] if live else None


def running_url(home: Path) -> str | None:
    live = _postmaster(home)
    return _url(live[1], DATABASE, APP_ROLE) if live else None


def owner_url(home: Path) -> str | None:
    """The superuser's URL of the running server: for migrations only."""
    live = _postmaster(home)
    return _url(live[1], DATABASE) if live else None


def start(home: Path) -> str:
    """Start the server unless it already runs; create the database; return the
    application's URL (the role exists once the database is migrated).

    The server is left running when this process exits (``cleanup_mode=None``).
    """
    if _postmaster(home) is None:
        with warnings.catch_warnings():
            # platformdirs warns on import when XDG_RUNTIME_DIR is unset (pgserver's lock dir).
            warnings.simplefilter("ignore")
            from pgserver.postgres_server import get_server

        home.mkdir(parents=True, exist_ok=True)
        # Left by a crash or reboot: pgserver would trust it if its pid was recycled.
        (data_dir(home) / "postmaster.pid").unlink(missing_ok=True)
        try:
            get_server(data_dir(home), cleanup_mode=None)
        except (subprocess.SubprocessError, OSError, AssertionError) as exc:
            raise StackError(
                f"could not start the embedded Postgres ({exc}); see {data_dir(home) / 'log'}"
            ) from exc
    live = _postmaster(home)
    if live is None:
        raise StackError(f"the embedded Postgres did not come up; see {data_dir(home) / 'log'}")
    _private_socket(live[1])
    _ensure_database(live[1])
    return _url(live[1], DATABASE, APP_ROLE)


def stop(home: Path) -> int | None:
    """Fast shutdown, as ``pg_ctl stop -m fast`` does it: SIGINT to the postmaster.

    Signalling directly (rather than running pg_ctl as the server's system user)
    needs no access to the data directory, whose ancestors' permissions others
    may have tightened since pgserver opened them (pytest does, for its tmp root).
    """
    live = _postmaster(home)
    if live is None:
        return None
    stop_process(live[0], signal.SIGINT, "the embedded Postgres", timeout_s=_STOP_TIMEOUT_S)
    return live[0]


def reachable(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=2):
            return True
    except psycopg.Error:
        return False


def _postmaster(home: Path) -> tuple[int, Path] | None:
    """(pid, socket directory) of the live server per ``postmaster.pid``, else None."""
    try:
        lines = (data_dir(home) / "postmaster.pid").read_text().splitlines()
        pid, socket_dir = int(lines[0]), lines[4].strip()
    except (OSError, ValueError, IndexError):
        return None
    if not socket_dir or not _is_postgres(pid):
        return None
    return pid, Path(socket_dir)


def _is_postgres(pid: int) -> bool:
    """A stale pid file may name a recycled pid: only a live ``postgres`` counts."""
    try:
        process = psutil.Process(pid)
        return bool(process.name() == "postgres" and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _url(socket_dir: Path, database: str, user: str = _SUPERUSER) -> str:
    return f"postgresql://{user}@/{database}?host={quote(str(socket_dir), safe='/')}"


def _private_socket(socket_dir: Path) -> None:
    """pgserver may put the socket in a world-writable runtime directory, and anyone
    who can open it logs in (trust): only its owner and root may."""
    socket = socket_dir / _SOCKET
    try:
        socket.chmod(0o700)
    except OSError as exc:
        raise StackError(f"could not make the embedded Postgres socket {socket} private: {exc}") from exc


def _ensure_database(socket_dir: Path) -> None:
    try:
        with psycopg.connect(_url(socket_dir, "postgres"), autocommit=True, connect_timeout=10) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
            if exists is None:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
    except psycopg.Error as exc:
        raise StackError(f"could not create the database {DATABASE!r}: {exc}") from exc
