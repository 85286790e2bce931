"""`council dispatch | preview | worker`: agent runs on Celery."""

from __future__ import annotations

import math
import os
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.live import Live
from rich.table import Table

from council.cli.common import JsonOpt, actor, engine
from council.cli.output import console, emit, err_console
from council.domain.ids import parse_id
from council.errors import BadInput, CouncilError
from council.ledger.db import DEFAULT_POOL_SIZE, POOL_SIZE_ENV

if TYPE_CHECKING:
    from council.agents.profiles import Profile

TERMINAL = ("succeeded", "failed")
POOLS = ("prefork", "threads")


def dispatch_cmd(
    thread: Annotated[str, typer.Option("--thread", help="Thread id.")],
    agents: Annotated[
        str, typer.Option("--agents", help="Comma-separated profile names.")
    ] = "claude,codex,glm",
    mode: Annotated[str, typer.Option("--mode", help="independent, deliberative or review.")] = "independent",
    rounds: Annotated[int, typer.Option("--rounds", help="Rounds (deliberative: round r sees r-1).")] = 1,
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
    as_json: JsonOpt = False,
) -> None:
    """Create the runs in Postgres, each pinned to the profile it must run, enqueue
    them, and optionally watch them finish."""
    from council.services.runs import dispatch
    from workers.app import bootstrap
    from workers.tasks import CeleryScheduler

    names = [a.strip() for a in agents.split(",") if a.strip()]
    if not names:
        raise BadInput("--agents names no agent")
    if not math.isfinite(timeout) or timeout <= 0:
        raise BadInput(f"--timeout must be a positive number of seconds, got {timeout}")
    bootstrap()
    db = engine()
    created = dispatch(
        db,
        CeleryScheduler(),
        thread_id=parse_id(thread, "thread"),
        agents=names,
        mode=mode,
        rounds=rounds,
        actor=actor(),
        proposal_id=parse_id(proposal, "retraction proposal") if proposal else None,
        simulate=simulate,
    )
    out = console if not as_json else err_console
    _say_what_runs(out, created)
    result: dict[str, Any] = {**created, "mode": mode, "rounds": rounds}
    if wait:
        expected = len(names) * rounds
        runs = _wait(db, created["dispatch_id"], expected, timeout, out)
        result["runs"] = [
            {
                k: r[k]
                for k in ("id", "agent", "round", "status", "attempt", "simulated", "error", "request_sha256")
            }
            for r in runs
        ]
        result["complete"] = len(runs) == expected and all(r["status"] in TERMINAL for r in runs)
    emit(
        result,
        as_json,
        lambda d: console.print(f"dispatch {d['dispatch_id']}: {len(d['run_ids'])} runs queued"),
    )
    if wait and not result["complete"]:
        raise CouncilError(f"dispatch {created['dispatch_id']} did not finish within {timeout:g} s")


def _say_what_runs(out: Any, created: dict[str, Any]) -> None:
    """One line per agent: the model it is pinned to, real or simulated, and why."""
    for name, executor in created["executors"].items():
        if executor["simulated"]:
            out.print(
                f"[yellow]simulated[/] {name}: {executor['model']} ({executor['why']}; the offline simulated "
                "provider stands in and the run is marked simulated)",
                highlight=False,
            )
        else:
            out.print(f"[green]real[/] {name}: {executor['model']} ({executor['why']})", highlight=False)


def _wait(db: Any, dispatch_id: Any, expected: int, timeout: float, out: Any) -> list[dict[str, Any]]:
    from council.ledger.run_lifecycle import dispatch_runs

    deadline = time.monotonic() + timeout
    runs: list[dict[str, Any]] = []
    with Live(console=out, refresh_per_second=4, transient=False) as live:
        while time.monotonic() < deadline:
            runs = dispatch_runs(db, dispatch_id)
            live.update(_table(runs, expected))
            if len(runs) == expected and all(r["status"] in TERMINAL for r in runs):
                break
            time.sleep(0.5)
    return runs


def _table(runs: list[dict[str, Any]], expected: int) -> Table:
    done = sum(1 for r in runs if r["status"] in TERMINAL)
    table = Table(title=f"runs: {done}/{expected} finished", title_justify="left")
    for column in ("round", "agent", "status", "attempt", "run"):
        table.add_column(column)
    colours = {"succeeded": "green", "failed": "red", "running": "cyan", "queued": "yellow", "created": "dim"}
    for r in runs:
        status = f"[{colours.get(r['status'], 'white')}]{r['status']}[/]"
        agent = r["agent"] + (" (sim)" if r["simulated"] else "")
        table.add_row(str(r["round"]), agent, status, str(r["attempt"]), str(r["id"])[:8])
    return table


def preview_cmd(
    thread: Annotated[str, typer.Option("--thread", help="Thread id.")],
    agent: Annotated[str, typer.Option("--agent", help="Profile name.")],
    mode: Annotated[str, typer.Option("--mode", help="independent or review.")] = "independent",
    as_json: JsonOpt = False,
) -> None:
    """Exactly the request a run of this agent would send now (same compiler, same hash)."""
    from council.agents.profiles import resolve
    from council.services.runs import compile_for

    if mode not in ("independent", "review"):
        raise BadInput("preview compiles a first-round request: --mode independent or review")
    profile = resolve(agent)
    compiled = compile_for(engine(), profile, parse_id(thread, "thread"), mode=mode)
    result = {
        "request": compiled.canonical(),
        "request_sha256": compiled.sha256,
        "simulated": profile.simulated,
        "provider": profile.provider,
        "executor": profile.pinned(),
        "exposures": [e.__dict__ for e in compiled.exposures],
        "input_features": compiled.input_features,
    }

    def render(data: dict[str, Any]) -> None:
        console.print(
            f"[bold]{data['request']['model']}[/] sha256 {data['request_sha256']}"
            + ("  [yellow](simulated)[/]" if data["simulated"] else "")
        )
        for message in data["request"]["messages"]:
            console.rule(message["role"])
            console.print(message["content"], markup=False, highlight=False)

    emit(result, as_json, render)


def profiles_cmd(
    simulate: Annotated[
        str | None, typer.Option("--simulate", help="auto, always or never (default: COUNCIL_SIMULATE).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Each profile: runtime, model, provider family, endpoint, key variable, and
    whether a dispatch here would run it real or simulated, and why."""
    from council.agents.profiles import load_profiles, simulation_mode

    mode = simulation_mode(simulate)
    result = {"simulation": mode, "profiles": [_profile_row(p) for p in load_profiles(mode).values()]}

    def render(data: dict[str, Any]) -> None:
        table = Table(title=f"profiles (simulation: {data['simulation']})", title_justify="left")
        for column in ("profile", "runtime", "model", "provider", "api_base", "key variable", "here"):
            table.add_column(column)
        for p in data["profiles"]:
            here = f"[yellow]simulated[/] ({p['why']})" if p["simulated"] else f"[green]real[/] ({p['why']})"
            key = p["api_key_env"] or "(none)"
            table.add_row(p["name"], p["runtime"], p["model"], p["provider"], p["api_base"] or "", key, here)
        console.print(table)

    emit(result, as_json, render)


def _profile_row(profile: Profile) -> dict[str, Any]:
    own = profile.stands_in_for or {"runtime": profile.runtime, "model": profile.model}
    return {
        "name": profile.name,
        "runtime": own["runtime"],
        "model": own["model"],
        "runs_as": profile.model,
        "provider": profile.provider,
        "api_base": profile.api_base,
        "api_key_env": profile.api_key_env,
        "key_set": bool(os.environ.get(profile.api_key_env)) if profile.api_key_env else None,
        "params": dict(profile.params),
        "max_turns": profile.max_turns,
        "timeout_s": profile.timeout_s,
        "simulated": profile.simulated,
        "why": profile.why,
    }


def worker_cmd(
    queues: Annotated[str, typer.Option("--queues", help="Comma-separated: runs, commit, maintenance.")] = (
        "runs,commit,maintenance"
    ),
    concurrency: Annotated[
        int, typer.Option("--concurrency", help="Tasks at once: processes, or threads with --pool threads.")
    ] = 2,
    pool: Annotated[
        str,
        typer.Option(
            "--pool",
            help="prefork (processes, the default) or threads (one process; for runs on real models, "
            "which mostly wait on the network).",
        ),
    ] = "prefork",
    beat: Annotated[bool, typer.Option("--beat", help="Also run the periodic sweep scheduler.")] = False,
    loglevel: Annotated[str, typer.Option("--loglevel")] = "INFO",
    name: Annotated[str | None, typer.Option("--name", help="Celery node name, e.g. runs@%h.")] = None,
) -> None:
    """A Celery worker with the project's configuration."""
    from workers.app import bootstrap
    from workers.metrics_server import default_directory

    wanted = [q.strip() for q in queues.split(",") if q.strip()]
    unknown = sorted(set(wanted) - {"runs", "commit", "maintenance"})
    if unknown or not wanted:
        raise BadInput(f"unknown queue(s): {', '.join(unknown) or '(none given)'}")
    if pool not in POOLS:
        raise BadInput(f"--pool must be one of {', '.join(POOLS)}, got {pool!r}")
    if concurrency < 1:
        raise BadInput(f"--concurrency must be at least 1, got {concurrency}")
    if pool == "threads":
        # Every thread may hold a database connection at once: the process's pool must cover them.
        os.environ.setdefault(POOL_SIZE_ENV, str(max(concurrency, DEFAULT_POOL_SIZE)))
    app = bootstrap()
    default_directory()  # before Celery's command line loads anything that imports prometheus_client
    argv = ["worker", "-Q", ",".join(wanted), "--pool", pool, "--concurrency", str(concurrency)]
    argv += ["--loglevel", loglevel]
    if name:
        argv += ["--hostname", name]
    if beat:
        from council.config import council_home

        home = council_home()
        home.mkdir(parents=True, exist_ok=True)
        argv += ["-B", "--schedule", str(home / "celerybeat-schedule")]
    app.worker_main(argv=argv)


def register(app: typer.Typer) -> None:
    app.command("dispatch")(dispatch_cmd)
    app.command("preview")(preview_cmd)
    app.command("profiles")(profiles_cmd)
    app.command("worker")(worker_cmd)
