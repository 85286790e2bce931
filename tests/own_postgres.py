"""A Postgres server of one test's own, to stop, kill and start again.

Fault tests take the database away from real workers; they must not disturb
the session's server, so they start a pgserver of their own in a temporary
directory (as ``tests.migrations.schema_dump.embedded_postgres`` does), with
the session's URL nowhere in sight. After a stop the server comes back on
the same socket, so every URL handed out stays valid.
"""

from __future__ import annotations

import shutil
import signal
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import psycopg

from council.ledger.migrate import upgrade


class OwnPostgres:
    def __init__(self, server: Any) -> None:
        self._server = server
        self._socket_dir = server.get_postmaster_info().socket_dir

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={self._socket_dir}"

    def create_migrated(self, database: str) -> str:
        """A database on this server, migrated to head; its URL."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"'.encode())
        url = self.url(database)
        upgrade(url)
        return url

    def stop(self, *, kill: bool) -> None:
        """Fast shutdown (SIGINT to the postmaster: clients are told the server is going
        away), or SIGKILL of the postmaster (clients find their connection dead; the
        next start runs crash recovery). Returns once every server process is gone."""
        postmaster = psutil.Process(self._server.get_pid())
        family = [postmaster, *postmaster.children(recursive=True)]
        postmaster.send_signal(signal.SIGKILL if kill else signal.SIGINT)
        _, alive = psutil.wait_procs(family, timeout=30)
        for straggler in alive:  # a backend of a killed postmaster exits on its own, soon
            straggler.kill()
        psutil.wait_procs(alive, timeout=10)

    def start(self) -> None:
        """Start the stopped server again, on the same socket directory."""
        with self._server._lock:  # what pgserver holds around its own start
            self._server.ensure_postgres_running()
        assert self._server.get_postmaster_info().socket_dir == self._socket_dir
        deadline = time.monotonic() + 30
        while not _answers(self.url()):
            assert time.monotonic() < deadline, "the restarted server does not answer"
            time.sleep(0.2)

    @property
    def running(self) -> bool:
        return _answers(self.url())


def _answers(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=2):
            return True
    except psycopg.Error:
        return False


@contextmanager
def own_postgres() -> Iterator[OwnPostgres]:
    """A fresh server for the caller alone; stopped and deleted on exit."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        from pgserver.postgres_server import get_server

    base = Path(tempfile.mkdtemp(prefix="council-own-pg-"))
    server = get_server(base / "pgdata", cleanup_mode="delete")
    try:
        yield OwnPostgres(server)
    finally:
        server.cleanup()  # stops the server if it runs, deletes its data
        shutil.rmtree(base, ignore_errors=True)
