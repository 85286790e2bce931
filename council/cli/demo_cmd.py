"""`council demo`: the main job end to end, on the stack `council up` runs."""

from __future__ import annotations

import sys
import time
from typing import Annotated, Any

import typer
from rich.console import Console

from council.cli.common import JsonOpt
from council.cli.output import console, emit, err_console, fetch_command, inert, returns, without_controls

COST_PAUSE_S = 5


@returns("council.domain.results.demo:DemoSummary")
def demo_cmd(
    keep: Annotated[bool, typer.Option("--keep", help="Leave the stack running afterwards.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Start the stack; a council of claude, codex and glm consolidates a proposition on the
    workers; its decisive evidence is invalidated, reviewed and the consolidation retracted."""
    from council import stack
    from council.bootstrap import bootstrap, release
    from council.demo.story import AGENTS, Story
    from council.domain.results.demo import DemoSummary
    from council.services.dispatch import profiles

    out = err_console if as_json else console  # with --json, stdout carries exactly one document
    mine = [p for p in profiles().profiles if p.name in AGENTS]
    real = [p for p in mine if not p.simulated]
    if real:
        _warn_cost(out, [f"{p.name} ({p.model})" for p in real], pause=not as_json and sys.stdin.isatty())

    started = stack.up(progress=lambda message: out.print(f"[dim]·[/] {inert(message)}", highlight=False))
    ours = [c for c in started["components"].values() if c.get("started_by_us")]
    already_running = all(c.get("reused") for c in ours)
    stop = not keep and not already_running
    try:
        wired = bootstrap()
        timeout_s = 600 if real else 150
        story = Story(wired.uow, wired.required_scheduler(), out, timeout_s=timeout_s, hint=fetch_command)
        web = started["web_url"]
        summary = story.run(page_url=lambda thread_id: f"{web}?thread={thread_id}" if web else None)
    finally:
        release()
        if stop:
            out.rule("stack")
            stack.down()
            out.print("stack stopped (`council demo --keep` leaves it running)")
    summary["simulated"] = [p.name for p in mine if p.simulated]
    summary["stack"] = {"home": started["home"], "left_running": not stop, "stopped": stop}
    summary["look_closer"] = _look_closer(summary)
    result = DemoSummary.model_validate(summary)
    emit(result, as_json, _render)
    if not result.ok:
        raise typer.Exit(1)


def _warn_cost(out: Console, models: list[str], *, pause: bool) -> None:
    out.print(
        f"[yellow]cost:[/] real models will be called — {inert(', '.join(models))} — for about 12 runs, "
        "billed to your API keys. COUNCIL_SIMULATE=always runs the offline simulated provider instead."
    )
    if pause:
        out.print(f"starting in {COST_PAUSE_S} s; Ctrl-C to stop")
        time.sleep(COST_PAUSE_S)


def _look_closer(summary: dict[str, Any]) -> list[str]:
    thread = summary["thread_id"]
    if thread is None:
        return []
    commands = [f"council reentry --thread {thread}", f"council watch --thread {thread}"]
    for version in summary["node_version_ids"].values():
        commands += [f"council groups --node {version}", f"council history --node {version}"]
    if summary["consolidation"]:
        commands.append(f"council replay {summary['consolidation']['id']}")
    if summary["invalidation"]:
        commands.append(f"council evidence show {summary['invalidation']['evidence_id']}")
    return [*commands, f"council memory list --thread {thread}", f"council events --thread {thread}"]


def _render(data: dict[str, Any]) -> None:
    console.rule("summary")
    for step in data["steps"]:
        mark = "[green]✓[/]" if step["ok"] else "[red]✗[/]"
        console.print(
            f"{mark} {inert(step['name'])} ({step['seconds']} s)"
            + (f": {inert(step['error'])}" if step["error"] else "")
        )
    if data["simulated"]:
        console.print(f"[yellow]simulated:[/] {inert(', '.join(data['simulated']))} (no API key set)")
    verdict = "[green]demo succeeded[/]" if data["ok"] else "[red]demo failed[/]"
    console.print(f"{verdict} (its steps took {data['elapsed_s']} s)")
    if data["page_url"] and data["stack"]["left_running"]:
        console.print(f"live page: {inert(data['page_url'])}")
    where = "the stack is still running" if data["stack"]["left_running"] else "after `council up`"
    console.print(f"Look closer ({where}):")
    for command in data["look_closer"]:
        console.print(f"  {inert(command)}", highlight=False)
    told = memory_section(data["reentry_markdown"] or "")
    if told:
        console.print("What the next session is told (the reentry packet's memory):")
        for line in told:
            console.print(f"  {without_controls(line)}", markup=False, highlight=False)


def memory_section(markdown: str) -> list[str]:
    """The lines of the reentry packet's memory section (what was consolidated, and what retracted)."""
    lines = markdown.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("## Memory")), None)
    if start is None:
        return []
    section = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if line.strip():
            section.append(line)
    return section


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_cmd)
