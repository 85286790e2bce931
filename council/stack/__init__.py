"""The embedded stack behind ``council up | down | status``.

Each component is either *embedded* — started here, its data, pid file and log
under ``config.council_home()`` — or *external*: its environment variable is
set, so nothing is started for it and it is never stopped.

The state file (``config.state_file()``, 0600) is written by :func:`up`. It holds
``database_url`` / ``broker_url`` for embedded components only (an external URL
comes from the environment and may carry a password, so it is never written):
the application's database URL (role ``council_app``) beside the owner's
``migrate_database_url``, the broker URL with the password the embedded Redis
was started with, the web server's ``web_port``, and one record per component.
What ``up`` and ``status`` return shows every URL redacted. :func:`down` stops
the embedded processes and removes the file, so ``config.database_url()`` never
returns a dead URL; the data directories stay on disk and the next :func:`up`
finds them again. Everything under the home is private (``council/files.py``).

Above the services, ``up`` starts a supervisor (``council/stack/supervisor.py``)
that runs and restarts the Celery workers, beat and the web server
(``council/stack/processes.py``); its pid is in the state file too. ``down``
stops it first — it stops its children — then Redis, then Postgres.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, TypedDict

from council import config
from council.config import ComponentRecord, StackState
from council.errors import CouncilError, StackError
from council.files import PRIVATE_UMASK, home_mode, private_dir
from council.settings import settings
from council.stack import environment, processes

Progress = Callable[[str], None]


class Backend(Protocol):
    """What a component module provides (see ``council/stack/postgres.py``)."""

    def data_dir(self, home: Path) -> Path: ...
    def start(self, home: Path) -> str: ...
    def stop(self, home: Path) -> int | None: ...
    def running_pid(self, home: Path) -> int | None: ...
    def running_url(self, home: Path) -> str | None: ...
    def owner_url(self, home: Path) -> str | None: ...
    def reachable(self, url: str) -> bool: ...


@dataclass(frozen=True)
class Component:
    name: str
    env_var: str  # when set, the service it names is used and nothing is started
    # where up records the embedded URL (read back by council.config)
    state_key: Literal["database_url", "broker_url"]
    backend: Backend
    owner_key: Literal["migrate_database_url"] | None = None  # the owner's URL, when it differs


class UpReport(TypedDict, total=False):
    """What :func:`up` returns (published as ``StackUp``)."""

    home: str
    database_url: str
    broker_url: str
    database_revision: str
    web_url: str | None
    components: dict[str, ComponentRecord]
    workers_restarted: list[str]


def components() -> tuple[Component, ...]:
    """In start order; ``down`` stops them in reverse.

    Imported here, not at the top: pgserver is slow to import.
    """
    from council.stack import postgres
    from council.stack import redis as redis_backend

    return (
        Component("postgres", "COUNCIL_DATABASE_URL", "database_url", postgres, "migrate_database_url"),
        Component("redis", "COUNCIL_BROKER_URL", "broker_url", redis_backend),
    )


def up(progress: Progress | None = None, used_keys: Collection[str] | None = None) -> UpReport:
    """Start (or reuse) every embedded component, migrate the database, start (or
    reuse) the supervised processes, record the state.

    Returns ``{"home", "database_url", "broker_url", "database_revision", "web_url",
    "components": {name: {"started_by_us", "url", "pid", "reused", ...}}}``: a
    service also has ``data_dir``, a supervised process ``log`` and ``state``; an
    external service's record is ``{"started_by_us": False, "url"}``. Every URL
    has its password redacted (the state file holds them whole). Running workers are
    restarted when a key that one of ``used_keys`` (the key variables the profiles name;
    None: any) names is set now but was not when they started.
    """
    say = progress or (lambda _message: None)
    home = config.council_home()
    os.umask(PRIVATE_UMASK)  # this process writes the stack's files too (pgserver's among them)
    with _locked(home):
        web_port = processes.choose_web_port(home)  # before anything starts: a taken port fails fast
        records: dict[str, ComponentRecord] = {}
        state: StackState = {"home": str(home), "components": records, "web_port": web_port}
        config.write_state(state)  # the supervisor reads the port from it
        result: UpReport = {"home": str(home), "components": records}
        for component in components():
            external = settings().variable(component.env_var)
            if external:
                say(f"{component.name}: using {component.env_var}")
                records[component.name] = {"started_by_us": False, "url": config.redact_url(external)}
                result[component.state_key] = config.redact_url(external)
                continue
            backend = component.backend
            reused = backend.running_pid(home) is not None
            say(f"{component.name}: {'already running' if reused else 'starting'}")
            url = backend.start(home)
            records[component.name] = {
                "started_by_us": True,
                "url": config.redact_url(url),
                "pid": backend.running_pid(home),
                "data_dir": str(backend.data_dir(home)),
                "reused": reused,
            }
            state[component.state_key] = url
            result[component.state_key] = config.redact_url(url)
            owner = backend.owner_url(home)
            if component.owner_key and owner:
                state[component.owner_key] = owner
            # Written as we go, so a half-finished `up` can still be brought `down`.
            config.write_state(state)
        say("database: migrating to head")
        result["database_revision"] = migrate_database()
        stale = environment.drift(home, used_keys) if processes.alive_supervisor(home) else []
        if stale:
            say("supervisor: restarting the workers, beat and web (" + "; ".join(stale) + ")")
            processes.stop(home)
        say("supervisor: workers (runs, commit, maintenance), beat and web")
        supervised = processes.start(home)
        keep = supervised[processes.SUPERVISOR]
        records[processes.SUPERVISOR] = {"started_by_us": True, "pid": keep["pid"], "log": keep["log"]}
        config.write_state(state)
        if "web" in supervised:
            say(f"web: waiting for it to listen on port {web_port}")
            earlier = supervised["web"]["restarts"] if keep["reused"] else 0
            processes.await_web(home, web_port, restarts=earlier)
    result["components"] = {**records, **supervised}
    result["web_url"] = supervised["web"]["url"] if "web" in supervised else None
    result["workers_restarted"] = stale
    return result


def restart(progress: Progress | None = None) -> dict[str, object]:
    """Stop the supervised workers, beat and web and start them again, so they run with the
    current environment (keys, profiles); Postgres and Redis keep running. Refused when the
    stack is not up."""
    say = progress or (lambda _message: None)
    home = config.council_home()
    with _locked(home):
        if not processes.alive_supervisor(home):
            raise StackError("the stack's workers are not running: `council up` starts them")
        before = [*environment.drift(home), *environment.notes(home)]
        say("supervisor: stopping the workers, beat and web")
        processes.stop(home)
        say("supervisor: starting them with the current environment")
        supervised = processes.start(home)
        port = (config.read_state() or {}).get("web_port")
        if "web" in supervised and port:
            processes.await_web(home, int(port))
    return {"home": str(home), "changed": before, "components": supervised}


def down() -> dict[str, object]:
    """Stop what ``up`` started under ``council_home()``; keep the data.

    The supervisor first (it stops the workers, beat and web), then the embedded
    services whose pid files live under the home directory; external services
    and processes ``up`` did not start are never touched. Returns ``{"home",
    "components": {name: {"stopped", "pid", "data_dir" or "log"}}}``.
    """
    home = config.council_home()
    with _locked(home):
        state = config.read_state() or {}
        records: dict[str, ComponentRecord] = state.setdefault("components", {})
        report = processes.stop(home)
        records.pop(processes.SUPERVISOR, None)
        failures: list[str] = []
        for component in reversed(components()):
            try:
                pid = component.backend.stop(home)
            except StackError as exc:
                failures.append(str(exc))
                continue
            report[component.name] = {
                "stopped": pid is not None,
                "pid": pid,
                "data_dir": str(component.backend.data_dir(home)),
            }
            records.pop(component.name, None)
            state.pop(component.state_key, None)
        if records:
            config.write_state(state)
        else:
            config.clear_state()
        if failures:
            raise StackError("; ".join(failures))
    return {"home": str(home), "components": report}


def status(used_keys: Collection[str] | None = None) -> dict[str, object]:
    """What is configured and running.

    Returns ``{"home", "state" (up, partial or down: of what ``up`` manages),
    "database_revision", "web_url", "components": {name: {"url", "running", "pid",
    "started_by_us", "external"}}}``; a supervised process also
    has ``state``, ``restarts``, ``last_exit_code`` and ``log``. URLs have passwords
    redacted, ``database_revision`` is None when the database is unreachable.
    """
    home = config.council_home()
    report: dict[str, ComponentRecord] = {}
    urls: dict[str, str | None] = {}  # unredacted, by state key
    for component in components():
        external = settings().variable(component.env_var)
        if external:
            urls[component.state_key] = external
            report[component.name] = {
                "url": config.redact_url(external),
                "running": component.backend.reachable(external),
                "pid": None,
                "started_by_us": False,
                "external": True,
            }
            continue
        pid = component.backend.running_pid(home)
        urls[component.state_key] = url = component.backend.running_url(home)
        report[component.name] = {
            "url": config.redact_url(url) if url else None,
            "running": pid is not None,
            "pid": pid,
            "started_by_us": pid is not None,
            "external": False,
        }
    database = urls["database_url"]
    revision = database_revision(database) if database and report["postgres"]["running"] else None
    report.update(processes.report(home))
    supervised = processes.alive_supervisor(home)
    web = report["web"]["url"] if "web" in report else None
    # What `up` manages (external services are the operator's): all running, some, or none.
    running = [bool(c.get("running")) for c in report.values() if not c.get("external")]
    state = "up" if all(running) else "partial" if any(running) else "down"
    return {
        "home": str(home),
        "state": state,
        # What the running workers lack that they would act on (restart them), and what else
        # differs that needs no restart; ``used_keys``: the key variables the profiles name.
        "stale_environment": environment.drift(home, used_keys) if supervised else [],
        "environment_notes": environment.notes(home, used_keys) if supervised else [],
        "database_revision": revision,
        "web_url": web,
        "components": report,
    }


def migrate_database() -> str:
    """Migrate the configured database to head, as its owner (``COUNCIL_MIGRATE_DATABASE_URL``,
    else ``COUNCIL_DATABASE_URL``, else the embedded stack's owner URL)."""
    from council.ledger import migrate

    url = config.migrate_database_url()
    assert url is not None  # required=True raises ConfigError instead
    try:
        return migrate.upgrade(url)
    except CouncilError as exc:
        raise StackError(f"could not migrate {config.redact_url(url)}: {_first_line(exc)}") from exc


def database_revision(url: str) -> str | None:
    """The Alembic revision of the database at ``url``; None when unreachable or unmigrated."""
    from council.ledger import migrate

    try:
        return migrate.current_revision(url)
    except CouncilError:
        return None


def _first_line(exc: CouncilError) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@contextmanager
def _locked(home: Path) -> Iterator[None]:
    """One ``up``/``down`` at a time per home directory."""
    private_dir(home, home_mode())
    with (home / ".stack.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
