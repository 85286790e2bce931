"""Rendering for every command: one JSON document with --json, Rich otherwise."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from council.domain.terminal import inert as inert
from council.domain.terminal import without_controls as without_controls

if TYPE_CHECKING:
    from rich.console import Console

    from council.domain.reentry import Fetch

F = TypeVar("F", bound=Callable[..., None])
RESULT_ATTRIBUTE = "__council_result__"


class _LazyConsole:
    """A Rich console made on first use: a start that prints only JSON (a script's
    `council … --json`) never imports Rich."""

    def __init__(self, *, stderr: bool = False) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def real(self) -> Console:
        if self._console is None:
            from rich.console import Console

            # emoji off: a stored ":warning:" is shown as written, not as a picture
            self._console = Console(stderr=self._stderr, emoji=False)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)

    # Special methods are looked up on the type, never through __getattr__: Rich's
    # Live enters its console (`with self.console:`) when it stops.
    def __enter__(self) -> Console:
        return self.real().__enter__()

    def __exit__(self, *exc: object) -> None:
        self.real().__exit__(*exc)


def rich_console(value: Console) -> Console:
    """The Rich console itself, for an API that is handed one (``rich.live.Live``)."""
    return value.real() if isinstance(value, _LazyConsole) else value


console = cast("Console", _LazyConsole())


def returns(result_type: str | type) -> Callable[[F], F]:
    """Declare the typed result a command prints with ``--json``, as
    ``"module:Name"``: the published schema (schema/cli-outputs.schema.json) is
    generated from these declarations. A name, not the class, so that starting
    the CLI (``--help``, a read) imports no result model it does not print;
    ``declared_result`` resolves it."""

    def mark(command: F) -> F:
        setattr(command, RESULT_ATTRIBUTE, result_type)
        return command

    return mark


def declared_result(command: Callable[..., object]) -> type | None:
    """The result type a command declared with ``@returns``, imported now (None if none)."""
    declared = getattr(command, RESULT_ATTRIBUTE, None)
    if declared is None:
        return None
    if isinstance(declared, type):
        return declared
    module, _, name = declared.partition(":")
    found: type = getattr(importlib.import_module(module), name)
    return found


err_console = cast("Console", _LazyConsole(stderr=True))


def _default(value: object) -> object:
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def to_json(data: object) -> str:
    return json.dumps(data, default=_default, sort_keys=True, ensure_ascii=False)


def emit(data: object, as_json: bool, render: Callable[[Any], None] | None = None) -> None:
    """Print exactly one JSON document on stdout, or a human rendering (renderers
    receive the document as plain JSON values, whatever the result type)."""
    if hasattr(data, "json_document"):
        data = data.json_document()
    if as_json:
        sys.stdout.write(to_json(data) + "\n")
        sys.stdout.flush()
        return
    if render is not None:
        render(data)
    else:  # json.dumps escapes C0 controls; a raw C1 control inside a string goes here
        console.print_json(without_controls(to_json(data)))


def fail(message: str, *, as_json: bool = False, code: int = 1) -> None:
    """One line on stderr (the caller exits with ``code``); under ``--json`` also the
    error document on stdout, so a script reading stdout always gets one document."""
    first_line = message.strip().splitlines()[0] if message.strip() else "error"
    err_console.print(f"[bold red]error:[/] {inert(first_line)}", highlight=False, soft_wrap=True)
    if as_json:
        sys.stdout.write(to_json({"error": first_line, "code": code}) + "\n")
        sys.stdout.flush()


def warn(message: str) -> None:
    """One line on stderr that does not change the outcome."""
    err_console.print(f"[bold yellow]warning:[/] {inert(message)}", highlight=False, soft_wrap=True)


def fetch_command(thread_id: str, fetch: Fetch) -> str:
    """Where a reentry packet's left-out section can be read, as a command."""
    commands = {
        "reentry": f"`council reentry --thread {thread_id} --budget {fetch.budget}`",
        "evidence": "`council evidence show ID`",
        "branches": f"`council branch list --thread {thread_id}`",
        "memory": f"`council memory list --thread {thread_id}`",
    }
    return commands[fetch.read]
