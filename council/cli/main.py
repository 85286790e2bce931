"""The `council` console script: wires the sub-command groups together."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from council.errors import CouncilError


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
    "retraction": REVERSAL,
    "watch": READING,
    "events": READING,
    "reentry": READING,
    "lint": READING,
    "serve": READING,
    "stances": READING,
    "calibration": READING,
    "rule-set": CONSOLIDATION,
    "mcp": RUNS,
    "up": STACK,
    "down": STACK,
    "status": STACK,
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


def _panels() -> None:
    for command in app.registered_commands:
        name = command.name or (command.callback.__name__ if command.callback else "")
        command.rich_help_panel = PANELS.get(name, OTHER)
    for group in app.registered_groups:
        group.rich_help_panel = PANELS.get(group.name or "", OTHER)


def register_commands() -> None:
    """Attach every command group (once; the schema generator calls it too)."""
    if app.registered_commands or app.registered_groups:
        return
    from council.cli import (
        consolidation_cmds,
        demo_cmd,
        graph_cmds,
        learning_cmds,
        ledger_cmds,
        mcp_cmd,
        reentry_cmds,
        reversal_cmds,
        run_cmds,
        serve_cmd,
        stack_cmds,
        watch_cmd,
        worker_cmd,
    )

    stack_cmds.register(app)
    ledger_cmds.register(app)
    graph_cmds.register(app)
    consolidation_cmds.register(app)
    learning_cmds.register(app)
    reentry_cmds.register(app)
    reversal_cmds.register(app, ledger_cmds.evidence_app)
    run_cmds.register(app)
    worker_cmd.register(app)
    watch_cmd.register(app)
    demo_cmd.register(app)
    serve_cmd.register(app)
    mcp_cmd.register(app)
    _panels()


def main(argv: list[str] | None = None) -> None:
    """Entry point: map the project's exceptions to exit codes (2 = bad input).
    Under ``--json`` a failure also prints one JSON document on stdout:
    ``{"error": "<the one-line reason>", "code": <exit code>}``."""
    from council.cli.output import fail

    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args
    register_commands()
    try:
        # Outside standalone mode click returns a raised Exit's code instead of exiting.
        code = app(args=args, standalone_mode=False)
    except CouncilError as exc:
        fail(str(exc), as_json=as_json, code=exc.exit_code)
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
    sys.exit(code if isinstance(code, int) else 0)
