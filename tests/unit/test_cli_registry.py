"""`council` imports only the command modules its first word needs
(``council.cli.main.REGISTERS``): the table must name, for every command and
command group, each module that defines one of its commands — else a start by
that word would miss them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from council.cli.main import REGISTERS, app, register_commands

REPO = Path(__file__).resolve().parents[2]


def _callbacks(typer_app: Any) -> list[Any]:
    found = [c.callback for c in typer_app.registered_commands if c.callback]
    own = typer_app.registered_callback  # a group that acts itself too (`dispatch --thread T`)
    if own is not None and own.callback is not None:
        found.append(own.callback)
    for group in typer_app.registered_groups:
        found.extend(_callbacks(group.typer_instance))
    return found


def _defined_by() -> dict[str, set[str]]:
    register_commands()
    defined: dict[str, set[str]] = {}
    for command in app.registered_commands:
        assert command.name and command.callback
        defined[command.name] = {command.callback.__module__}
    for group in app.registered_groups:
        assert group.name
        defined[group.name] = {callback.__module__ for callback in _callbacks(group.typer_instance)}
    return defined


def test_the_table_names_every_module_defining_each_command() -> None:
    listed: dict[str, set[str]] = {}
    for module, names in REGISTERS.items():
        for name in names:
            listed.setdefault(name, set()).add(f"council.cli.{module}")
    assert listed == _defined_by()


LISTING = """
import sys
from council.cli.main import app, register_commands
for word in sys.argv[1:]:
    register_commands(word)
register_commands()
for command in app.registered_commands:
    print("command", command.name, command.rich_help_panel)
for group in app.registered_groups:
    names = [c.name for c in group.typer_instance.registered_commands]
    print("group", group.name, group.rich_help_panel, names)
"""


def _listing(*first_words: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-c", LISTING, *first_words], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_a_start_by_one_word_then_all_registers_the_same_tree_in_the_same_order() -> None:
    """A process that registered some modules first (a test, the schema generator after
    a command ran) ends with the tree and order of one that registered all at once."""
    full = _listing()
    assert "group evidence" in full and "command mcp" in full
    for words in (["retraction"], ["thread", "mcp"], ["evidence"], ["no-such-word"]):
        assert _listing(*words) == full, words


def test_the_lazy_console_serves_rich_live_as_a_console_would() -> None:
    # Rich's Live enters its console when it stops: the lazy console must be one to it.
    from io import StringIO

    from rich.console import Console
    from rich.live import Live

    from council.cli.output import _LazyConsole

    lazy = _LazyConsole()
    lazy._console = Console(file=StringIO(), force_terminal=False)
    with Live("shown", console=lazy, transient=False) as live:  # type: ignore[arg-type]
        live.update("updated")
    assert "updated" in lazy.real().file.getvalue()  # type: ignore[attr-defined]
