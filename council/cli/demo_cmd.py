"""`council demo`: the main job end to end on the embedded stack."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from council.cli.common import JsonOpt
from council.cli.output import console, emit, err_console


def demo_cmd(
    keep: Annotated[
        bool, typer.Option("--keep", help="Leave the embedded stack running afterwards.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Start the stack, run a scripted council thread to a consolidation, replay it."""
    from council import stack
    from council.demo import run_demo
    from council.ledger.db import default_engine, dispose_all

    def say(message: str) -> None:
        # With --json, stdout carries exactly one document: progress goes to stderr.
        (err_console if as_json else console).print(f"· {message}", highlight=False)

    started = stack.up(progress=say)
    embedded = [c for c in started["components"].values() if c.get("started_by_us")]
    already_running = bool(embedded) and all(c.get("reused") for c in embedded)
    try:
        summary: dict[str, Any] = run_demo(default_engine(), say)
    finally:
        dispose_all()
        if embedded and not keep and not already_running:
            stack.down()
            say("stack stopped (use --keep to leave it running)")
    summary["stack"] = {"home": started["home"], "left_running": keep or already_running or not embedded}

    def render(data: dict[str, Any]) -> None:
        verdict = "[green]demo succeeded[/]" if data["ok"] else "[red]demo failed[/]"
        console.print(verdict)
        running = data["stack"]["left_running"]
        where = " (the stack is still running):" if running else " after `council up`:"
        console.print("Look closer" + where)
        for command in data["look_closer"]:
            console.print(f"  {command}")

    emit(summary, as_json, render)
    if not summary["ok"]:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_cmd)
