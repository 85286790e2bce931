"""`council worker`: a Celery worker with the project's configuration (the one
command that starts the workers' face)."""

from __future__ import annotations

from typing import Annotated

import typer

from council.domain.vocabulary import QUEUES
from council.errors import BadInput

POOLS = ("prefork", "threads")


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
    from council.workers.app import connect
    from council.workers.metrics_server import default_directory

    wanted = [q.strip() for q in queues.split(",") if q.strip()]
    unknown = sorted(set(wanted) - set(QUEUES))
    if unknown or not wanted:
        raise BadInput(f"unknown queue(s): {', '.join(unknown) or '(none given)'}")
    if pool not in POOLS:
        raise BadInput(f"--pool must be one of {', '.join(POOLS)}, got {pool!r}")
    if concurrency < 1:
        raise BadInput(f"--concurrency must be at least 1, got {concurrency}")
    app = connect()
    default_directory()  # before Celery's command line loads anything that imports prometheus_client
    argv = ["worker", "-Q", ",".join(wanted), "--pool", pool, "--concurrency", str(concurrency)]
    # Council coordinates through the ledger, not through worker-to-worker messages (it revokes
    # nothing and reads no peer's clock): mingle's start-up exchange waits a second for
    # neighbours on every start and restart, and gossip's reconnection on a broker restart
    # logs kombu's "Error on restarting Gossip" (docs/operations/faults.md).
    argv += ["--without-gossip", "--without-mingle", "--loglevel", loglevel]
    if name:
        argv += ["--hostname", name]
    if beat:
        from council.config import council_home

        home = council_home()
        home.mkdir(parents=True, exist_ok=True)
        argv += ["-B", "--schedule", str(home / "celerybeat-schedule")]
    app.worker_main(argv=argv)


def register(app: typer.Typer) -> None:
    app.command("worker")(worker_cmd)
