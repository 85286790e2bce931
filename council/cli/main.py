"""The `council` console script: wires the sub-command groups together."""

from __future__ import annotations

import re
import sys
import traceback
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from council.errors import CouncilError
from council.settings import debug_requested

if TYPE_CHECKING:
    from typer.models import CommandInfo, TyperInfo


class _ByJob(TyperGroup):
    """Lists commands panel by panel, in the order of PANEL_ORDER (then by registration)."""

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        order = {panel: index for index, panel in enumerate(PANEL_ORDER)}
        return sorted(names, key=lambda name: order.get(PANELS.get(name, OTHER), len(order)))


app = typer.Typer(
    cls=_ByJob,
    name="council",
    help="A governed reasoning ledger with a council of LLM agents on top of it.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish, PowerShell
    pretty_exceptions_enable=False,
)

# `council --help` groups commands by the job they serve. One table, command (or
# command group) -> panel: a new command is added here; one left out shows under
# "Other commands".
THREADS, RUNS, CONSOLIDATION, REVERSAL, READING, STACK = (
    "Threads and evidence",
    "Runs",
    "Consolidation",
    "Reversal",
    "Reading",
    "Stack",
)
PANELS = {
    "ask": THREADS,
    "thread": THREADS,
    "evidence": THREADS,
    "node": THREADS,
    "branch": THREADS,
    "claim": THREADS,
    "action": THREADS,
    "dispatch": RUNS,
    "preview": RUNS,
    "profiles": RUNS,
    "run": RUNS,
    "worker": RUNS,
    "consolidate": CONSOLIDATION,
    "groups": CONSOLIDATION,
    "history": CONSOLIDATION,
    "replay": CONSOLIDATION,
    "memory": CONSOLIDATION,
    "consolidation": CONSOLIDATION,
    "retraction": REVERSAL,
    "proposal": REVERSAL,
    "watch": READING,
    "events": READING,
    "reentry": READING,
    "lint": READING,
    "serve": READING,
    "stances": READING,
    "calibration": READING,
    "eval": READING,
    "export": READING,
    "import": THREADS,
    "resolve": THREADS,
    "rule-set": CONSOLIDATION,
    "mcp": RUNS,
    "up": STACK,
    "down": STACK,
    "status": STACK,
    "restart": STACK,
    "db": STACK,
    "demo": STACK,
}
OTHER = "Other commands"
PANEL_ORDER = (THREADS, RUNS, CONSOLIDATION, REVERSAL, READING, STACK, OTHER)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("council")
        except PackageNotFoundError:  # run from a source tree that is not installed
            found = "unknown"
        print(f"council {found}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """A governed reasoning ledger with a council of LLM agents on top of it."""
    from council.bootstrap import bootstrap_settings

    bootstrap_settings()  # once per command: a bad variable is refused here, naming it (exit 2)


def _panels() -> None:
    for command in app.registered_commands:
        name = command.name or (command.callback.__name__ if command.callback else "")
        command.rich_help_panel = PANELS.get(name, OTHER)
    for group in app.registered_groups:
        group.rich_help_panel = PANELS.get(group.name or "", OTHER)
    _short_helps(app)


def _short_helps(typer_app: typer.Typer) -> None:
    """Every command's one-line help, in this app and the command groups under it."""
    for command in typer_app.registered_commands:
        if command.short_help is None and command.callback is not None:
            command.short_help = one_paragraph(command.help or command.callback.__doc__)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _short_helps(group.typer_instance)


def one_paragraph(text: str | None) -> str | None:
    """A docstring's first paragraph on one line: the commands' list wraps it between
    words at the terminal's width (Rich's help keeps a docstring's own line breaks)."""
    if not text:
        return None
    import inspect

    return " ".join(inspect.cleandoc(text).split("\n\n")[0].split())


# Which module of council/cli registers which commands and command groups, in the
# order `council --help` lists them within a panel. A start imports only the modules
# its first word needs (a script's `council thread list --json` loads no consolidation,
# run or MCP commands); `--help`, an option first or an unknown word load them all.
# tests/unit/test_cli_registry.py checks this table against what the modules register.
REGISTERS = {
    "ask_cmd": ("ask",),
    "stack_cmds": ("up", "down", "status", "restart", "db"),
    "ledger_cmds": ("thread", "evidence", "events"),
    "graph_cmds": ("node", "branch", "claim", "action"),
    "consolidation_cmds": ("consolidate", "replay", "groups", "history", "memory"),
    "learning_cmds": ("rule-set", "stances", "calibration"),
    "observe_cmds": ("import", "resolve", "eval", "export"),
    "reentry_cmds": ("reentry", "lint"),
    "reversal_cmds": ("evidence", "retraction"),
    "run_cmds": ("dispatch", "preview", "profiles", "run"),
    "worker_cmd": ("worker",),
    "watch_cmd": ("watch",),
    "demo_cmd": ("demo",),
    "serve_cmd": ("serve",),
    "mcp_cmd": ("mcp",),
    # after the modules whose groups it adds to (evidence, node, run, dispatch, claim, action)
    "list_cmds": ("evidence", "node", "run", "dispatch", "proposal", "consolidation", "claim", "action"),
}
# What each registered module added: (commands, groups), kept in REGISTERS order.
_added: dict[str, tuple[list[CommandInfo], list[TyperInfo]]] = {}


def register_commands(first_word: str | None = None) -> None:
    """Attach the command groups ``first_word`` needs, or every one (each module
    once, in REGISTERS order whatever was attached before; the schema generator
    calls this too)."""
    import importlib

    wanted = [module for module, names in REGISTERS.items() if first_word in names] or list(REGISTERS)
    for name in wanted:
        if name in _added:
            continue
        commands, groups = len(app.registered_commands), len(app.registered_groups)
        module = importlib.import_module(f"council.cli.{name}")
        if name == "reversal_cmds":  # its evidence commands join the evidence group
            from council.cli.ledger_cmds import evidence_app

            module.register(app, evidence_app)
        else:
            module.register(app)
        _added[name] = (app.registered_commands[commands:], app.registered_groups[groups:])
    app.registered_commands = [c for name in REGISTERS if name in _added for c in _added[name][0]]
    app.registered_groups = [g for name in REGISTERS if name in _added for g in _added[name][1]]
    _panels()


def main(argv: list[str] | None = None) -> None:
    """Entry point: map the project's exceptions to exit codes (2 = bad input).
    Under ``--json`` a failure also prints one JSON document on stdout:
    ``{"error": "<the one-line reason>", "code": <exit code>}``."""
    from council.cli.output import fail

    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args
    for position, arg in enumerate(args, start=1):
        # Bytes that are not UTF-8 reach Python as lone surrogates, which no output or row can hold.
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            fail(f"argument {position} is not UTF-8 text: {shown[:80]}", as_json=as_json, code=2)
            sys.exit(2)
    register_commands(args[0] if args else None)
    try:
        # Outside standalone mode click returns a raised Exit's code instead of exiting.
        code = app(args=args, standalone_mode=False)
    except CouncilError as exc:
        fail(_URL_CREDENTIALS.sub("***@", str(exc)), as_json=as_json, code=exc.exit_code)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        fail("aborted", as_json=as_json, code=1)
        sys.exit(1)
    except typer.TyperException as exc:  # usage errors: missing option, bad choice (exit 2)
        code = int(getattr(exc, "exit_code", 2))
        fail(exc.format_message() if hasattr(exc, "format_message") else str(exc), as_json=as_json, code=code)
        sys.exit(code)
    except Exception as exc:  # the database or broker away, or a bug: still one line and one document
        fail(unexpected(exc), as_json=as_json, code=1)
        if debug_requested():
            traceback.print_exc()
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


_URL_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")


def unexpected(exc: BaseException) -> str:
    """One line for an exception the project did not map: what was unreachable, if that is
    what it was, and never a URL's credentials."""
    names = {type(c).__module__.split(".")[0] for c in type(exc).__mro__}
    detail = " ".join(str(exc).split()) or type(exc).__name__
    if "psycopg" in names:
        what = "the database did not answer"
        detail = " ".join(str(getattr(exc, "orig", None) or exc).split())
    elif names & {"redis", "kombu", "amqp"}:
        what = "the broker did not answer"
    else:
        what = f"unexpected {type(exc).__name__} (COUNCIL_DEBUG=1 prints the traceback)"
    return f"{what}: {_URL_CREDENTIALS.sub('***@', detail)[:300]}"
