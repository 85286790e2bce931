"""Fixtures and helpers for end-to-end tests on real Celery workers."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis
from sqlalchemy import Engine, text

from tests.engines import unit_of_work
from tests.processes import die_with_parent, stop_groups, worker_environment
from tests.published import validate_cli_output

Workers = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def worker_env(db_url: str, redis_url: str, tmp_path: Path) -> dict[str, str]:
    redis.Redis.from_url(redis_url).flushdb()  # no message of an earlier test survives
    return worker_environment(
        db_url,
        redis_url,
        tmp_path,
        COUNCIL_RUN_LEASE_S="6",
        COUNCIL_SWEEP_EVERY_S="2",
        COUNCIL_SWEEP_STALE_S="4",
        NO_COLOR="1",
    )


@pytest.fixture
def workers(worker_env: dict[str, str], tmp_path: Path) -> Iterator[Workers]:
    started: list[subprocess.Popen[bytes]] = []

    def start(*extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = (tmp_path / f"worker-{len(started)}.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "council.cli", "worker", "--concurrency", "2", *extra],
            env={**worker_env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        started.append(proc)
        return proc

    yield start
    stop_groups(started, grace_s=20)


def council(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "council.cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


# How often wait_for checks its condition: a check is one small query or Redis command, and a
# coarser interval only adds its half on average to every wait (30 waits in tests/e2e).
POLL_S = 0.1


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(POLL_S)


def rows(engine: Engine, sql: str, **params: Any) -> list[Any]:
    with unit_of_work(engine) as conn:
        return list(conn.execute(text(sql), params))


@contextmanager
def serving(env: dict[str, str], log: Path, *args: str) -> Iterator[dict[str, Any]]:
    """`council serve --port 0 --json` in a subprocess; yields the document it printed
    (url, host, port, ...) and stops it afterwards."""
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "council.cli", "serve", "--port", "0", "--json", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
        )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, f"council serve printed nothing; see {log}"
        started: dict[str, Any] = json.loads(line)
        validate_cli_output(("serve", "--json"), started)
        yield started
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
