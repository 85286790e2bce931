"""`council dispatch | preview | profiles` and `council run record | show`: agent runs."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.live import Live
from rich.table import Table

from council.cli import render
from council.cli.common import JsonOpt, actor, council, record, uow
from council.cli.output import console, emit, err_console, inert, returns, rich_console, without_controls
from council.domain.budget import runs_per_agent
from council.domain.vocabulary import DEFAULT_COUNCIL, TERMINAL_RUN_STATUSES
from council.errors import BadInput

if TYPE_CHECKING:
    from rich.console import Console

    from council.domain.results.runs import Dispatched, DispatchedRun

TERMINAL = TERMINAL_RUN_STATUSES

run_app = typer.Typer(help="Record and inspect agent runs.", no_args_is_help=True)


dispatch_app = typer.Typer(
    help="Create a dispatch (with --thread), or list and show dispatches.", invoke_without_command=True
)


@returns("council.domain.results.runs:Dispatched")
def dispatch_cmd(
    ctx: typer.Context,
    thread: Annotated[str | None, typer.Option("--thread", help="Thread id.")] = None,
    agents: Annotated[
        str | None,
        typer.Option(
            "--agents",
            help="Comma-separated profile names (default: claude,codex,glm; for --mode review, "
            "the agents that worked the thread, or its review setting's).",
        ),
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            help="independent, deliberative, council (propose, cross-review blind, then deliberate) "
            "or review.",
        ),
    ] = "independent",
    rounds: Annotated[
        int | None,
        typer.Option(
            "--rounds",
            help="Rounds (deliberative: round r sees r-1); for --mode council the deliberative rounds "
            "after its proposing and cross-review rounds (default 2; 1 for any other mode).",
        ),
    ] = None,
    proposal: Annotated[str | None, typer.Option("--proposal", help="Retraction proposal (review).")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for every round, showing progress.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait with --wait.")] = 600,
    simulate: Annotated[
        str | None,
        typer.Option(
            "--simulate",
            help="auto (simulate a profile whose key is unset), always, or never (refuse to simulate); "
            "default: COUNCIL_SIMULATE, else auto.",
        ),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            help="An idempotency key: a retry with the same key returns the first dispatch, creates nothing.",
        ),
    ] = None,
    budget_usd: Annotated[float | None, typer.Option("--budget-usd", help=render.BUDGET_HELP)] = None,
    controls: Annotated[bool, typer.Option("--controls", help=render.CONTROLS_HELP)] = False,
    as_json: JsonOpt = False,
) -> None:
    """Create the runs in Postgres, each pinned to the profile it must run, enqueue
    them, and optionally watch them finish. Should the broker be down, the dispatch
    still stands (delivery "deferred") and the sweep sends its runs when it is back.
    `dispatch list --thread ID` and `dispatch show ID` read dispatches."""
    from council.services.dispatch import dispatch

    if ctx.invoked_subcommand is not None:
        return
    if thread is None:
        raise BadInput("--thread is required to dispatch (or: dispatch list --thread ID, dispatch show ID)")
    wired = council()
    if agents is None and mode == "review":
        from council.services.reviewers import review_agents

        names = review_agents(wired.uow, thread)  # as the automatic review would choose them
    else:
        names = [a.strip() for a in (agents or ",".join(DEFAULT_COUNCIL)).split(",") if a.strip()]
    if not names:
        raise BadInput("--agents names no agent")
    if not math.isfinite(timeout) or timeout <= 0:
        raise BadInput(f"--timeout must be a positive number of seconds, got {timeout}")
    created = dispatch(
        wired.uow,
        wired.required_scheduler(),
        thread,
        names,
        mode=mode,
        rounds=rounds if rounds is not None else (2 if mode == "council" else 1),
        actor=actor(),
        proposal=proposal,
        simulate=simulate,
        key=key,
        budget_usd=budget_usd,
        controls=controls,
    )
    out = console if not as_json else err_console
    _say_what_runs(out, created)
    if created.reservation is not None:
        out.print(
            inert(render.reservation_line(created.reservation.model_dump(mode="json"))), highlight=False
        )
    if created.delivery == "deferred":
        err_console.print(f"delivery deferred: {inert(created.deferred_reason)}", highlight=False)
    if not wait:
        emit(created, as_json, lambda d: console.print(inert(dispatch_summary(d)), highlight=False))
        return
    expected = len(names) * runs_per_agent(created.rounds, controls=controls, mode=created.mode)
    runs = wait_for_runs(created, expected, timeout, out)
    complete = len(runs) == expected and all(r.status in TERMINAL for r in runs)
    created = created.model_copy(update=waited(runs, complete))
    emit(created, as_json, lambda d: _print_waited(d))
    # Exit 1 when any run failed or the wait ran out: the document above says which and why;
    # stderr gets the one-line reason.
    if not complete:
        err_console.print(
            f"dispatch {created.dispatch_id} did not finish within {timeout:g} s "
            f"({created.answered} of {len(names)} agents answered so far)",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(1)
    if created.failed:
        err_console.print(
            f"{created.failed} run(s) failed: {created.answered} of {len(names)} agents answered",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(1)


def waited(runs: list[DispatchedRun], complete: bool) -> dict[str, Any]:
    """What --wait adds to a dispatch: its runs, whether all ended, how many failed, how many
    agents had every run succeed, and the cost."""
    from council.domain.results.runs import Cost

    by_agent: dict[str, list[DispatchedRun]] = {}
    for run in runs:
        if run.control_of is None:  # an agent answered when its council runs did (controls aside)
            by_agent.setdefault(run.agent, []).append(run)
    answered = sum(1 for own in by_agent.values() if all(r.status == "succeeded" for r in own))
    return {
        "runs": runs,
        "complete": complete,
        "failed": sum(1 for r in runs if r.status == "failed"),
        "answered": answered,
        "cost": Cost.of(runs),
    }


def _print_waited(data: dict[str, Any]) -> None:
    """The summary line, each failed run with its reason, who answered, and the cost."""
    console.print(inert(dispatch_summary(data)), highlight=False)
    for run in data["runs"] or []:
        if run["status"] == "failed":
            console.print(
                without_controls(
                    f"  failed: {run['agent']} round {run['round']} (run {str(run['id'])[:8]}): "
                    f"{run['error'] or 'no reason recorded'}"
                ),
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
    agents = len(data["agents"])
    console.print(f"{data['answered']} of {agents} agents answered", highlight=False)
    cost = data["cost"]
    if cost is not None:
        console.print(
            f"cost: ${cost['usd']:.4f}, {cost['prompt_tokens']} prompt + {cost['completion_tokens']} "
            "completion tokens"
            + (f"; {cost['unpriced']} run(s) unpriced (cost unknown)" if cost.get("unpriced") else "")
            + (f"; ${data['reservation']['usd']:.4f} reserved" if data.get("reservation") else ""),
            highlight=False,
        )


def dispatch_summary(data: dict[str, Any]) -> str:
    """The dispatch in one line of its own: mode, rounds and the runs of every round."""
    controls = bool(data.get("controls"))
    total = len(data["agents"]) * runs_per_agent(data["rounds"], controls=controls, mode=data["mode"])
    head = (
        f"dispatch {data['dispatch_id']} ({data['mode']}, {data['rounds']} round(s)"
        f"{', with control runs' if controls else ''}): {total} run(s) in all"
    )
    if data["already_dispatched"]:
        return f"{head}; already dispatched for this proposal, nothing new queued"
    if data.get("replayed"):
        head = f"{head}; the dispatch of key {data['idempotency_key']!r}, nothing new created"
        if data["runs"] is None:
            return head
    if data["runs"] is None:
        return f"{head}, {len(data['run_ids'])} queued now" + (
            "; later rounds are queued as each round ends" if data["rounds"] > 1 else ""
        )
    counts: dict[str, int] = {}
    for run in data["runs"]:
        counts[run["status"]] = counts.get(run["status"], 0) + 1
    ended = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return f"{head} — {ended or 'none started'}"


def _say_what_runs(out: Console, created: Dispatched) -> None:
    """One line per agent: the model it is pinned to, real or simulated, and why."""
    for name, executor in created.executors.items():
        if executor.simulated:
            out.print(
                f"[yellow]simulated[/] {inert(name)}: {inert(executor.model)} ({inert(executor.why)}; "
                "the offline simulated "
                "provider stands in and the run is marked simulated)",
                highlight=False,
            )
        else:
            out.print(
                f"[green]real[/] {inert(name)}: {inert(executor.model)} ({inert(executor.why)})",
                highlight=False,
            )


def wait_for_runs(created: Dispatched, expected: int, timeout: float, out: Console) -> list[DispatchedRun]:
    """Poll the dispatch's runs until all ended or ``timeout``: a live table on a terminal, plain
    lines as runs end when piped (the progress `dispatch --wait` and `ask` show)."""
    from council.services.dispatch import dispatch_runs

    deadline = time.monotonic() + timeout
    runs: list[DispatchedRun] = []
    target = rich_console(out)
    if not target.is_terminal:  # piped: plain lines as runs end, never a redrawn table
        said = ""
        while time.monotonic() < deadline:
            runs = dispatch_runs(uow(), created.dispatch_id)
            line = _progress_line(runs, expected)
            if line != said:
                out.print(without_controls(line), markup=False, highlight=False)
                said = line
            if len(runs) == expected and all(r.status in TERMINAL for r in runs):
                break
            time.sleep(0.5)
        return runs
    with Live(console=target, refresh_per_second=4, transient=False) as live:
        while time.monotonic() < deadline:
            runs = dispatch_runs(uow(), created.dispatch_id)
            live.update(_table(runs, expected))
            if len(runs) == expected and all(r.status in TERMINAL for r in runs):
                break
            time.sleep(0.5)
    return runs


def _progress_line(runs: list[DispatchedRun], expected: int) -> str:
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.status] = counts.get(run.status, 0) + 1
    done = sum(n for status, n in counts.items() if status in TERMINAL)
    states = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return f"runs: {done}/{expected} finished ({states or 'none created yet'})"


def _table(runs: list[DispatchedRun], expected: int) -> Table:
    done = sum(1 for r in runs if r.status in TERMINAL)
    table = Table(title=f"runs: {done}/{expected} finished", title_justify="left")
    for column in ("round", "agent", "status", "attempt", "run"):
        table.add_column(column)
    colours = {"succeeded": "green", "failed": "red", "running": "cyan", "queued": "yellow", "created": "dim"}
    for r in runs:
        status = f"[{colours.get(r.status, 'white')}]{inert(r.status)}[/]"
        agent = inert(r.agent) + (" (sim)" if r.simulated else "")
        table.add_row(str(r.round), agent, status, str(r.attempt), str(r.id)[:8])
    return table


@returns("council.domain.results.runs:Preview")
def preview_cmd(
    thread: Annotated[str, typer.Option("--thread", help="Thread id.")],
    agent: Annotated[str, typer.Option("--agent", help="Profile name.")],
    mode: Annotated[
        str, typer.Option("--mode", help="independent, council (its proposing round) or review.")
    ] = "independent",
    as_json: JsonOpt = False,
) -> None:
    """Exactly the request a first-round run of this agent would send now (same compiler, same hash)."""
    from council.services.dispatch import preview

    result = preview(uow(), thread, agent, mode=mode)

    def render(data: dict[str, Any]) -> None:
        console.print(
            f"[bold]{inert(data['request']['model'])}[/] sha256 {data['request_sha256']}"
            + ("  [yellow](simulated)[/]" if data["simulated"] else "")
        )
        for message in data["request"]["messages"]:
            console.rule(inert(message["role"]))
            console.print(without_controls(message["content"]), markup=False, highlight=False)

    emit(result, as_json, render)


@returns("council.domain.results.runs:Profiles")
def profiles_cmd(
    simulate: Annotated[
        str | None, typer.Option("--simulate", help="auto, always or never (default: COUNCIL_SIMULATE).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Each profile: runtime, model, provider family, endpoint, key variable, and
    whether a dispatch here would run it real or simulated, and why."""
    from council.services.dispatch import profiles

    def render(data: dict[str, Any]) -> None:
        # A block a profile, so that its model and endpoint are shown whole in 80 columns.
        console.print(f"[bold]profiles[/] (simulation: {inert(data['simulation'])})", highlight=False)
        for p in data["profiles"]:
            why = inert(p["why"])
            here = f"[yellow]simulated[/] ({why})" if p["simulated"] else f"[green]real[/] ({why})"
            console.print(f"[bold]{inert(p['name'])}[/]  {inert(p['model'])}", highlight=False)
            key = p["api_key_env"] or "(none)"
            endpoint = f" · api_base {inert(p['api_base'])}" if p["api_base"] else ""
            console.print(
                f"  {inert(p['runtime'])} · provider {inert(p['provider'])} · key variable {inert(key)}"
                f"{endpoint} · {here}",
                highlight=False,
            )

    emit(profiles(simulate), as_json, render)


@run_app.command("record")
@returns("council.domain.results.runs:RunRecorded")
def run_record(
    thread: Annotated[str, typer.Option("--thread", help="Thread id.")],
    agent: Annotated[str, typer.Option("--agent", help="Agent name, e.g. claude.")],
    model: Annotated[str, typer.Option("--model", help="Model string, e.g. anthropic/claude-sonnet-4-6.")],
    provider: Annotated[
        str | None, typer.Option("--provider", help="Model provider (default: inferred).")
    ] = None,
    parent: Annotated[str | None, typer.Option("--parent", help="Parent run id.")] = None,
    exposed_to: Annotated[
        list[str] | None, typer.Option("--exposed-to", help="RUN_ID whose stances it was shown (repeatable).")
    ] = None,
    round_no: Annotated[int, typer.Option("--round", help="Round number.")] = 1,
    as_json: JsonOpt = False,
) -> None:
    """Record a run made outside the workers, with its lineage; add its claims, then close it."""
    from council.domain.commands import RecordedRun
    from council.services.runs import record_run

    recorded = RecordedRun(
        thread=thread,
        agent=agent,
        model=model,
        provider=provider,
        parent_run=parent,
        exposed_to=tuple(exposed_to or ()),
        round_no=round_no,
    )
    result = record_run(uow(), recorded, actor=actor())
    emit(
        result,
        as_json,
        record("run recorded", ["id", "agent", "model", "provider", "parent_run_id", "exposed_to"]),
    )


@run_app.command("close")
@returns("council.domain.results.runs:RunClosed")
def run_close(run_id: str, as_json: JsonOpt = False) -> None:
    """Close a run you recorded: it ends succeeded and takes no more claims."""
    from council.services.runs import close_run

    emit(
        close_run(uow(), run_id, actor=actor()),
        as_json,
        record("run closed", ["id", "agent", "status", "claims"]),
    )


@run_app.command("show")
@returns("council.domain.results.runs:RunShown")
def run_show(run_id: str, as_json: JsonOpt = False) -> None:
    """Lineage, exposures, request hash, claims, the pinned executor and each attempt."""
    from council.services.runs import show_run

    result = show_run(uow(), run_id)
    emit(result, as_json, render.run_shown)


def register(app: typer.Typer) -> None:
    dispatch_app.callback()(dispatch_cmd)
    app.add_typer(dispatch_app, name="dispatch")
    app.command("preview")(preview_cmd)
    app.command("profiles")(profiles_cmd)
    app.add_typer(run_app, name="run")
