"""Prometheus metrics of this process, in one registry of its own.

Faces record what they observe here and ``GET /metrics`` exposes the registry.
A registry of our own (not prometheus_client's global one) keeps the
exposition to Council's metrics only.

Workers record runs, consolidations, lock waits and retries here too. A
prefork worker's pool processes share nothing, so a worker runs in
prometheus_client's multiprocess mode: with ``PROMETHEUS_MULTIPROC_DIR`` set
(before prometheus_client is first imported — it picks its value store then),
each process writes its samples to files there and the exposition merges every
process's files (``council/workers/metrics_server.py`` sets this up).
"""

from __future__ import annotations

import hmac
import re
import socket
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from wsgiref.simple_server import make_server

import psutil
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Metric,
    generate_latest,
    make_wsgi_app,
    multiprocess,
)
from prometheus_client.exposition import ThreadingWSGIServer, _SilentHandler
from prometheus_client.registry import Collector

from council.settings import settings

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

REGISTRY = CollectorRegistry()

HTTP_REQUESTS = Counter(
    "council_http_requests",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
    registry=REGISTRY,
)
HTTP_SECONDS = Histogram(
    "council_http_request_duration_seconds",
    "Time to answer an HTTP request (a stream: its whole life), by method and route template.",
    ["method", "route"],
    registry=REGISTRY,
)
RUNS = Counter(
    "council_runs",
    "Agent run attempts that ended, by agent and status (succeeded, failed, fenced, transient_error, error).",
    ["agent", "status"],
    registry=REGISTRY,
)
RUN_SECONDS = Histogram(
    "council_run_duration_seconds",
    "Time of one run attempt from its claim to its end, model calls included, by agent.",
    ["agent"],
    buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900),
    registry=REGISTRY,
)
RUNS_IN_PROGRESS = Gauge(
    "council_runs_in_progress",
    "Run attempts executing now, by agent (summed over a worker's live processes).",
    ["agent"],
    multiprocess_mode="livesum",
    registry=REGISTRY,
)
COMMIT_SECONDS = Histogram(
    "council_commit_duration_seconds",
    "Time of one consolidation, its transaction retries included, by outcome.",
    ["outcome"],
    registry=REGISTRY,
)
LOCK_WAIT_SECONDS = Histogram(
    "council_commit_lock_wait_seconds",
    "Time of the committer statement that takes an advisory lock (node: the node lock; evidence: "
    "the shared evidence locks), almost all of it waiting; a wait cut by lock_timeout lands above 10.",
    ["lock"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
    registry=REGISTRY,
)
RETRIES = Counter(
    "council_retries",
    "Retries by kind: commit_transaction (the committer), celery_task (a task Celery re-queued, "
    "e.g. a run after a transient model error).",
    ["kind"],
    registry=REGISTRY,
)
TOKENS = Counter(
    "council_tokens",
    "Tokens a run's model calls used, by provider, model and kind (prompt, completion); an agent "
    "CLI's input and output tokens count as prompt and completion.",
    ["provider", "model", "kind"],
    registry=REGISTRY,
)
COST_USD = Counter(
    "council_cost_usd",
    "What runs cost in USD (litellm's price map), by provider and model; a run whose model has "
    "no price adds nothing here and records cost_usd NULL.",
    ["provider", "model"],
    registry=REGISTRY,
)


def exposition() -> tuple[bytes, str]:
    """The registry in the Prometheus text format: (body, content type); in
    multiprocess mode, every process's samples."""
    return generate_latest(_exposed()), CONTENT_TYPE_LATEST


# Every label value comes from a fixed set, so no request can add a series of its own:
# the method is one of these or "other", the route a template, the status a real one.
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def observe_http(method: str, route: str, status: int, seconds: float) -> None:
    """Count one answered request; ``route`` is the template (``/runs/{run_id}``), never a raw path;
    a method outside ``HTTP_METHODS`` counts as ``other``."""
    shown_method = method if method in HTTP_METHODS else "other"
    shown_status = str(status) if 100 <= status <= 599 else "other"
    HTTP_REQUESTS.labels(method=shown_method, route=route, status=shown_status).inc()
    HTTP_SECONDS.labels(method=shown_method, route=route).observe(seconds)


@dataclass
class RunAttempt:
    """How a run attempt ended; the caller sets ``status`` before leaving the block."""

    status: str = "error"  # left unset: an unexpected exception ended the attempt


@contextmanager
def run_attempt(agent: str) -> Iterator[RunAttempt]:
    """Time one run attempt, count it by its status and show it in progress meanwhile."""
    outcome = RunAttempt()
    started = time.monotonic()
    RUNS_IN_PROGRESS.labels(agent=agent).inc()
    try:
        yield outcome
    finally:
        RUNS_IN_PROGRESS.labels(agent=agent).dec()
        RUN_SECONDS.labels(agent=agent).observe(time.monotonic() - started)
        RUNS.labels(agent=agent, status=outcome.status).inc()


def count_run(agent: str, status: str) -> None:
    """Count a run ended without an attempt of its own (retries exhausted)."""
    RUNS.labels(agent=agent, status=status).inc()


# Provider and model come from the run's pinned profile (operator configuration, not a
# request), so their number is bounded by the profiles; a value that is not a plain
# identifier, or is long, is shown as "other" so no odd string becomes a series.
_LABEL_OK = re.compile(r"[A-Za-z0-9._:/@+-]{1,80}")


def _shown(value: str) -> str:
    return value if _LABEL_OK.fullmatch(value) else "other"


def count_usage(
    provider: str, model: str, usage: Mapping[str, object] | None, cost_usd: float | None
) -> None:
    """Add a run's recorded usage: its prompt and completion tokens and, when the model
    was priced, its cost."""
    labels = {"provider": _shown(provider), "model": _shown(model)}
    for kind in ("prompt", "completion"):
        tokens = (usage or {}).get(f"{kind}_tokens")
        if isinstance(tokens, int | float) and not isinstance(tokens, bool) and tokens > 0:
            TOKENS.labels(kind=kind, **labels).inc(tokens)
    if cost_usd is not None and cost_usd > 0:
        COST_USD.labels(**labels).inc(cost_usd)


def observe_commit(outcome: str, seconds: float) -> None:
    """One consolidation call: ``committed``, ``already_consolidated`` or ``not_ready``."""
    COMMIT_SECONDS.labels(outcome=outcome).observe(seconds)


@contextmanager
def lock_wait(*locks: str) -> Iterator[list[str]]:
    """Time the statement that takes locks, whether it gets them or times out: one
    observation per kind of lock, ``locks`` and those the block adds to the list it is given
    (the committer's read call takes evidence locks only when it decides something)."""
    taken = list(locks)
    started = time.monotonic()
    try:
        yield taken
    finally:
        elapsed = time.monotonic() - started
        for lock in taken:
            LOCK_WAIT_SECONDS.labels(lock=lock).observe(elapsed)


def count_retry(kind: str) -> None:
    """``commit_transaction`` or ``celery_task``."""
    RETRIES.labels(kind=kind).inc()


LOOPBACK_ADDRESSES = frozenset({"127.0.0.1", "localhost", "::1"})


def serve(port: int, addr: str, token: str | None = None) -> int:
    """Serve the exposition over HTTP from a daemon thread of this process; the port bound.
    Off loopback it needs a bearer token (the API's read token); with a token, a scrape
    without it is refused (401)."""
    if token is None and addr not in LOOPBACK_ADDRESSES:
        raise ValueError(f"worker metrics on {addr} need a read token: set COUNCIL_API_READ_TOKEN")
    app = make_wsgi_app(_exposed())
    guarded = app if token is None else _bearer_only(app, token)
    family = ThreadingWSGIServer
    if ":" in addr:

        class V6(ThreadingWSGIServer):
            address_family = socket.AF_INET6

        family = V6
    server = make_server(addr, port, guarded, family, handler_class=_SilentHandler)
    threading.Thread(target=server.serve_forever, name="council-metrics", daemon=True).start()
    return int(server.server_address[1])


def _bearer_only(app: WSGIApplication, token: str) -> WSGIApplication:
    expected = f"Bearer {token}".encode()

    def guarded(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        given = str(environ.get("HTTP_AUTHORIZATION", "")).encode("latin-1", "replace")
        if not hmac.compare_digest(given, expected):
            start_response("401 Unauthorized", [("WWW-Authenticate", "Bearer"), ("Content-Length", "0")])
            return [b""]
        return app(environ, start_response)

    return guarded


def forget_process(pid: int) -> None:
    """A pool process exited: drop its live gauges (its counters still count)."""
    multiprocess.mark_process_dead(pid, settings().metrics_dir)  # type: ignore[no-untyped-call]


def _exposed() -> CollectorRegistry:
    directory = settings().metrics_dir
    if not directory:
        return REGISTRY
    merged = CollectorRegistry()
    merged.register(_AllProcesses(directory))
    return merged


class _AllProcesses(Collector):
    """Every process's samples in a multiprocess directory, merged at each scrape."""

    def __init__(self, directory: str) -> None:
        self._directory = directory
        self._merged = multiprocess.MultiProcessCollector(None, path=directory)  # type: ignore[no-untyped-call]

    def collect(self) -> Iterable[Metric]:
        # A process killed outright never ran its exit hook; its live gauges
        # would count it in progress for ever.
        for path in Path(self._directory).glob("gauge_live*_*.db"):
            pid = int(path.stem.rsplit("_", 1)[1])
            if not psutil.pid_exists(pid):
                multiprocess.mark_process_dead(pid, self._directory)  # type: ignore[no-untyped-call]
        merged: Iterable[Metric] = self._merged.collect()  # type: ignore[no-untyped-call]
        return merged
