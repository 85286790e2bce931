"""The `council` console script: wires the sub-command groups together."""

from __future__ import annotations

import sys

import typer

from council.errors import CouncilError

app = typer.Typer(
    name="council",
    help="A governed reasoning ledger with a council of LLM agents on top of it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


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
