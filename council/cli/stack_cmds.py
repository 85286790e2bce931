"""`council up | down | status` and `council db upgrade`: the embedded stack's face."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from council.cli.common import JsonOpt, record
from council.cli.output import console, emit, inert, returns, without_controls
from council.cli.tables import Column, table

if TYPE_CHECKING:
    from council.domain.results.stack import DatabaseUrl


def register(app: typer.Typer) -> None:
    app.command("up")(up)
    app.command("down")(down)
    app.command("status")(status)
    app.command("restart")(restart)
    db = typer.Typer(help="Database maintenance and access.", no_args_is_help=True)
    db.command("upgrade")(db_upgrade)
    db.command("url")(db_url)
    db.command("psql", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(db_psql)
    app.add_typer(db, name="db")


ReadOnly = Annotated[
    bool, typer.Option("--read-only", help="As the dashboards' read-only role (council_dashboard).")
]


def _database_url(read_only: bool) -> DatabaseUrl:
    from council import config
    from council.domain.results.stack import DatabaseUrl

    found = config.read_only_database_url() if read_only else config.database_url()
    assert found is not None  # required: a ConfigError says how to configure one
    return DatabaseUrl(url=found, role=config.url_role(found), read_only=read_only)


@returns("council.domain.results.stack:DatabaseUrl")
def db_url(read_only: ReadOnly = False, as_json: JsonOpt = False) -> None:
    """The database URL (COUNCIL_DATABASE_URL, else the embedded stack's), for psql or a dashboard."""
    emit(_database_url(read_only), as_json, lambda d: print(d["url"]))


def db_psql(ctx: typer.Context, read_only: ReadOnly = False) -> None:
    """psql on the database (arguments after `--` go to psql)."""
    import shutil
    import subprocess

    from council.errors import BadInput

    psql = shutil.which("psql")
    if psql is None:
        raise BadInput(
            "psql is not installed (apt-get install postgresql-client); `council db url` prints the URL"
        )
    url = _database_url(read_only).url
    sys.stdout.flush()
    code = subprocess.call([psql, url, *ctx.args])
    if code:
        raise typer.Exit(code)


@returns("council.domain.results.stack:StackUp")
def up(as_json: JsonOpt = False) -> None:
    """Start Postgres and Redis (embedded unless configured by environment), migrate, and
    start the supervised Celery workers, beat and web server."""
    from council import stack
    from council.domain.results.stack import StackUp

    data = StackUp.model_validate(
        stack.up(progress=None if as_json else _progress, used_keys=_profile_keys())
    )
    emit(data, as_json, _render_up)


@returns("council.domain.results.stack:StackRestarted")
def restart(as_json: JsonOpt = False) -> None:
    """Restart the supervised workers, beat and web so they pick up the current environment
    (provider keys, profiles); Postgres and Redis keep running."""
    from council import stack
    from council.domain.results.stack import StackRestarted

    data = StackRestarted.model_validate(stack.restart(progress=None if as_json else _progress))

    def render(shown: dict[str, Any]) -> None:
        _components("stack restarted", [c for c in _component_rows(shown) if c["component"] != "supervisor"])
        for change in shown["changed"]:
            console.print(f"picked up: {without_controls(change)}", markup=False, highlight=False)

    emit(data, as_json, render)


@returns("council.domain.results.stack:StackDown")
def down(as_json: JsonOpt = False) -> None:
    """Stop what `council up` started (supervisor and its processes, then Redis and
    Postgres); the data stays for the next `up`."""
    from council import stack
    from council.domain.results.stack import StackDown

    emit(StackDown.model_validate(stack.down()), as_json, _render_down)


@returns("council.domain.results.stack:StackStatus")
def status(as_json: JsonOpt = False) -> None:
    """Each component: whether it runs, its pid, restarts and last exit code; the database revision."""
    from council import stack
    from council.domain.results.stack import StackStatus

    emit(StackStatus.model_validate(stack.status(used_keys=_profile_keys())), as_json, _render_status)


@returns("council.domain.results.stack:Migrated")
def db_upgrade(as_json: JsonOpt = False) -> None:
    """Migrate COUNCIL_DATABASE_URL (or the embedded stack's database) to head."""
    from council import stack
    from council.domain.results.stack import Migrated

    emit(Migrated(revision=stack.migrate_database()), as_json, record("database", ["revision"]))


def _profile_keys() -> set[str] | None:
    """The key variables the profiles name (what the workers read for a real run); None
    when the profiles cannot be read here (then any key counts)."""
    from council.errors import ConfigError
    from council.services.dispatch import profiles

    try:
        return {p.api_key_env for p in profiles(None).profiles if p.api_key_env}
    except ConfigError:
        return None


def _progress(message: str) -> None:
    console.print(f"[dim]·[/] {inert(message)}", highlight=False)


def _component_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"component": name, **{k: v for k, v in info.items() if v is not None}}
        for name, info in data["components"].items()
    ]


def _render_up(data: dict[str, Any]) -> None:
    _components("stack up", _component_rows(data), ("reused",))
    for change in data.get("workers_restarted") or []:
        console.print(f"workers restarted: {without_controls(change)}", markup=False, highlight=False)
    console.print(f"database revision: [bold]{inert(data['database_revision'])}[/]")
    _render_web(data)


def _render_down(data: dict[str, Any]) -> None:
    _components("stack down", _component_rows(data), ("stopped",))


def _render_status(data: dict[str, Any]) -> None:
    if data["state"] == "down":
        console.print(f"stack is [bold]down[/] ({inert(data['home'])}): nothing runs; `council up` starts it")
        return
    console.print(f"stack is [bold]{inert(data['state'])}[/] ({inert(data['home'])})")
    for change in data.get("stale_environment") or []:
        console.print(
            without_controls(f"the workers run with an old environment ({change}): `council restart`"),
            markup=False,
            highlight=False,
        )
    for note in data.get("environment_notes") or []:
        console.print(without_controls(f"note: {note}; no restart needed"), markup=False, highlight=False)
    _components("stack", _component_rows(data), ("running", "state", "restarts", "last_exit_code"))
    console.print(f"database revision: [bold]{inert(data['database_revision'] or 'unknown')}[/]")
    _render_web(data)


def _components(title: str, components: list[dict[str, Any]], shown: tuple[str, ...] = ()) -> None:
    """The stack's components in 80 columns: a table of their state, then each address on
    a line of its own (a URL is never broken: the terminal wraps a long one whole)."""
    widths = {"running": 7, "state": 8, "restarts": 8, "last_exit_code": 9, "reused": 6, "stopped": 7}
    headers = {"last_exit_code": "last exit"}
    columns: list[Column] = [("component", "component", 12), ("pid", "pid", 8)]
    columns += [(key, headers.get(key, key), widths[key]) for key in shown]
    table(title, columns, _component_cell)(components)
    for component in components:
        if component.get("url"):
            line = f"  {component['component']}: {component['url']}"
            console.print(without_controls(line), markup=False, highlight=False, soft_wrap=True)


def _component_cell(item: Mapping[str, object], key: str) -> str:
    value = item.get(key)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


def _render_web(data: dict[str, Any]) -> None:
    if data["web_url"] is None:
        console.print("[dim]web: `council serve` is not installed yet[/]")
    else:
        console.print(f"web: {inert(data['web_url'])}")
