"""Shared pieces of the CLI: the --json option, the actor, the wiring, renderers."""

from __future__ import annotations

import functools
import getpass
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from council.bootstrap import Council, UnitOfWork

from council.cli.output import console, inert
from council.settings import settings

JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document on stdout.")]


def actor() -> str:
    """Who is acting: COUNCIL_ACTOR, else the CLI user."""
    explicit = settings().actor
    if explicit:
        return explicit
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


@functools.cache
def council() -> Council:
    """The wired dependencies of this process (one bootstrap per command; the
    pool is opened when a command first needs it, see ``bootstrap``)."""
    from council.bootstrap import bootstrap

    return bootstrap(lazy_pool=True)


def uow() -> UnitOfWork:
    return council().uow


def touched_memory(items: Sequence[Mapping[str, object]]) -> None:
    """A read showed these memory items: the one re-verification on read
    (:func:`council.services.reversal.reverify_touched`); a warning when it was not queued."""
    from council.cli.output import warn
    from council.services.reversal import reverify_touched

    reason = reverify_touched(council().scheduler, items)
    if reason is not None:
        warn(reason)


def record(title: str, keys: list[str]) -> Callable[[Mapping[str, object]], None]:
    """A renderer showing chosen keys of one result as a two-column table."""

    def render(data: Mapping[str, object]) -> None:
        from rich.table import Table

        table = Table(title=inert(title), show_header=False, title_justify="left")
        table.add_column(style="bold cyan")
        table.add_column(overflow="fold")
        for key in keys:
            if key in data and data[key] is not None:
                table.add_row(inert(key), inert(_short(data[key])))
        console.print(table)

    return render


def _short(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(_short(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_short(v)}" for k, v in value.items())
    text = str(value)
    return text if len(text) <= 200 else text[:197] + "..."
