"""A worker's Prometheus endpoint, wired by Celery signals (no SQL, no prompts).

With ``COUNCIL_METRICS_PORT`` set, the worker's main process serves, on that
port (bound to ``COUNCIL_METRICS_ADDR``, default 127.0.0.1), the metrics of
every pool process: prometheus_client's multiprocess mode, each process
writing its own files under ``PROMETHEUS_MULTIPROC_DIR``, merged at each
scrape. ``council worker`` defaults that directory to
``$COUNCIL_HOME/metrics/worker-<port>``; a bare ``celery worker`` needs it set.
Unset port: nothing is served and no file is written. One directory per worker.
Off loopback a scrape needs the API's read token (``COUNCIL_API_READ_TOKEN``, as
``Authorization: Bearer``), and a worker told to serve there without one refuses to start.
"""

from __future__ import annotations

from pathlib import Path

from celery import signals

from council import config
from council.settings import export, settings

PORT_ENV = "COUNCIL_METRICS_PORT"
ADDR_ENV = "COUNCIL_METRICS_ADDR"
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's own variable


def _port() -> int | None:
    return settings().metrics_port


def default_directory() -> None:
    """Choose the multiprocess directory when a port is set and no directory is.
    prometheus_client picks its value store when first imported, and Celery's
    command line imports it (through the flower plugin) before any worker signal:
    so ``council worker`` calls this before handing over to Celery."""
    port = _port()
    if port is not None and not settings().metrics_dir:
        export(MULTIPROC_ENV, str(config.council_home() / "metrics" / f"worker-{port}"))


def _token() -> str | None:
    from council.httpguard import READ_TOKEN_ENV, checked_token

    return checked_token(READ_TOKEN_ENV, settings().api_read_token)


def _addr() -> str:
    return settings().metrics_addr


@signals.worker_init.connect
def _prepare_directory(**_: object) -> None:
    """In the main process, before the pool forks: refuse open metrics off loopback, and empty
    the directory of an earlier run's files."""
    if _port() is None:
        return
    from council import metrics
    from council.errors import ConfigError

    try:
        token = _token()
    except ConfigError as exc:
        raise SystemExit(str(exc)) from None
    if token is None and _addr() not in metrics.LOOPBACK_ADDRESSES:
        raise SystemExit(
            f"{PORT_ENV} serves on {_addr()} ({ADDR_ENV}): off loopback a scrape needs a token, "
            "and COUNCIL_API_READ_TOKEN is not set"
        )
    directory = settings().metrics_dir
    if not directory:
        # SystemExit: Celery only logs an Exception from a handler, and every pool process's counts
        # would be lost in silence.
        raise SystemExit(f"{PORT_ENV} is set but {MULTIPROC_ENV} is not (`council worker` sets a default)")
    Path(directory).mkdir(parents=True, exist_ok=True)
    for stale in Path(directory).glob("*.db"):
        stale.unlink()


@signals.worker_ready.connect
def _serve(**_: object) -> None:
    """In the main process, which no task occupies: one scrape covers every pool process."""
    port = _port()
    if port is not None:
        from council import metrics

        metrics.serve(port, _addr(), _token())


@signals.worker_process_shutdown.connect
def _forget_process(pid: int, **_: object) -> None:
    if _port() is not None:
        from council import metrics

        metrics.forget_process(pid)


@signals.task_retry.connect
def _count_task_retry(**_: object) -> None:
    from council import metrics

    metrics.count_retry("celery_task")
