"""`council dispatch | preview | worker`: agent runs on Celery."""

from __future__ import annotations

import math
import os
import time
from typing import Annotated, Any

import typer
from rich.live import Live
from rich.table import Table

from council.cli.common import JsonOpt, actor, engine
from council.cli.output import console, emit, err_console
from council.domain.ids import parse_id
from council.errors import BadInput, CouncilError
from council.ledger.db import DEFAULT_POOL_SIZE, POOL_SIZE_ENV

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
    as_json: JsonOpt = False,
) -> None:
    """Create the runs in Postgres, enqueue them, and optionally watch them finish."""
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
    )
    out = console if not as_json else err_console
    if created["simulated"]:
        out.print(
            f"[yellow]simulated:[/] {', '.join(created['simulated'])} (no API key set; the offline "
            "simulated provider stands in and every run is marked simulated)"
        )
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
    app.command("worker")(worker_cmd)
