"""Prometheus metrics (council/metrics.py) and a worker's metrics endpoint
(council/workers/metrics_server.py): what each call records, multiprocess merging, and
the Celery signal handlers. No database, no broker."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import signals

from council import metrics
from council.workers import metrics_server
from tests.scrape import sample


def scrape() -> bytes:
    return metrics.exposition()[0]


@pytest.fixture(autouse=True)
def _single_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for variable in (metrics.MULTIPROC_ENV, metrics_server.PORT_ENV):
        monkeypatch.delenv(variable, raising=False)
    yield
    os.environ.pop(metrics.MULTIPROC_ENV, None)  # the worker's handlers under test may set it


def test_an_http_request_is_counted_and_timed_by_route_template() -> None:
    # Given the current counts of one route
    labels = {"method": "GET", "route": "/threads/{thread_id}"}
    answered = {**labels, "status": "200"}
    before = scrape()
    # When a request to it is observed
    metrics.observe_http("GET", "/threads/{thread_id}", 200, 0.042)
    body, content_type = metrics.exposition()
    # Then the text exposition counts it with its status and times it
    assert content_type.startswith("text/plain")
    counted = "council_http_requests_total"
    assert sample(body, counted, **answered) == sample(before, counted, **answered) + 1
    timed = "council_http_request_duration_seconds_sum"
    assert sample(body, timed, **labels) == pytest.approx(sample(before, timed, **labels) + 0.042)


def test_a_run_attempt_is_counted_by_status_timed_and_shown_in_progress_meanwhile() -> None:
    # Given an agent's counts
    before = scrape()
    # When one attempt succeeds
    with metrics.run_attempt("unit-claude") as observed:
        during = scrape()
        observed.status = "succeeded"
    after = scrape()
    # Then it was in progress during the attempt, and afterwards counted and timed
    assert sample(during, "council_runs_in_progress", agent="unit-claude") == 1
    assert sample(after, "council_runs_in_progress", agent="unit-claude") == 0
    counted = "council_runs_total"
    assert sample(after, counted, agent="unit-claude", status="succeeded") == (
        sample(before, counted, agent="unit-claude", status="succeeded") + 1
    )
    timed = "council_run_duration_seconds_count"
    assert sample(after, timed, agent="unit-claude") == sample(before, timed, agent="unit-claude") + 1


def test_an_attempt_ended_by_an_unexpected_exception_counts_as_error() -> None:
    # When an attempt raises before its status is known
    with pytest.raises(RuntimeError), metrics.run_attempt("unit-codex"):
        raise RuntimeError("database went away")
    # Then it counts as an error and is no longer in progress
    body = scrape()
    assert sample(body, "council_runs_total", agent="unit-codex", status="error") == 1
    assert sample(body, "council_runs_in_progress", agent="unit-codex") == 0


def test_a_run_failed_after_exhausted_retries_is_counted_without_a_duration() -> None:
    before = scrape()
    metrics.count_run("unit-glm", "failed")
    after = scrape()
    assert sample(after, "council_runs_total", agent="unit-glm", status="failed") == 1
    assert sample(after, "council_run_duration_seconds_count", agent="unit-glm") == sample(
        before, "council_run_duration_seconds_count", agent="unit-glm"
    )


def test_commit_latency_lock_waits_and_retries_are_recorded_by_their_labels() -> None:
    # Given the current counts
    before = scrape()
    # When a commit, a lock wait that times out and two retries are observed
    metrics.observe_commit("not_ready", 0.25)
    with pytest.raises(TimeoutError), metrics.lock_wait("node"):
        raise TimeoutError("lock_timeout")
    metrics.count_retry("commit_transaction")
    metrics.count_retry("commit_transaction")
    after = scrape()

    # Then each is under its own label (the timed-out wait too)
    def grew(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    assert grew("council_commit_duration_seconds_count", outcome="not_ready") == 1
    assert grew("council_commit_duration_seconds_sum", outcome="not_ready") == pytest.approx(0.25)
    assert grew("council_commit_lock_wait_seconds_count", lock="node") == 1
    assert grew("council_retries_total", kind="commit_transaction") == 2


def test_a_celery_task_retry_is_counted() -> None:
    before = sample(scrape(), "council_retries_total", kind="celery_task")
    signals.task_retry.send(sender=None, request=None, reason="provider kept failing", einfo=None)
    assert sample(scrape(), "council_retries_total", kind="celery_task") == before + 1


# ------------------------------------------------------------ multiprocess mode


def _in_multiprocess_mode(directory: Path, script: str) -> bytes:
    """Run ``script`` in a fresh interpreter in multiprocess mode; it prints an exposition."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        env={**os.environ, metrics.MULTIPROC_ENV: str(directory)},
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def test_one_exposition_merges_every_process_and_forgets_one_killed_mid_run(tmp_path: Path) -> None:
    # Given three forked processes recording in multiprocess mode, the last dying mid-attempt
    # (no exit hook runs, as when a pool process is killed)
    body = _in_multiprocess_mode(
        tmp_path,
        """
        import multiprocessing, os, sys
        from council import metrics

        def work(dies):
            metrics.count_retry("celery_task")
            with metrics.run_attempt("claude") as observed:
                observed.status = "succeeded"
                if dies:
                    os._exit(0)

        for dies in (False, False, True):
            child = multiprocessing.get_context("fork").Process(target=work, args=(dies,))
            child.start()
            child.join()
        # When the parent, which recorded nothing itself, exposes the metrics
        sys.stdout.buffer.write(metrics.exposition()[0])
        """,
    )
    # Then the counts of all three are summed and the dead process is not in progress
    assert sample(body, "council_retries_total", kind="celery_task") == 3
    assert sample(body, "council_runs_total", agent="claude", status="succeeded") == 2
    assert sample(body, "council_runs_in_progress", agent="claude") == 0


def test_a_forgotten_process_no_longer_counts_in_progress_but_its_counts_remain(tmp_path: Path) -> None:
    # Given a live process with a run in progress and a counted retry
    body = _in_multiprocess_mode(
        tmp_path,
        """
        import os, sys
        from council import metrics

        metrics.RUNS_IN_PROGRESS.labels(agent="glm").inc()
        metrics.count_retry("commit_transaction")
        before = metrics.exposition()[0]
        # When it is forgotten (a pool process's exit hook)
        metrics.forget_process(os.getpid())
        sys.stdout.buffer.write(before + b"# ---\\n" + metrics.exposition()[0])
        """,
    )
    before, after = body.split(b"# ---\n")
    # Then its gauge is gone and its counter stays
    assert sample(before, "council_runs_in_progress", agent="glm") == 1
    assert sample(after, "council_runs_in_progress", agent="glm") == 0
    assert sample(after, "council_retries_total", kind="commit_transaction") == 1


# ------------------------------------------------------ the worker's signal handlers


def _response(responses: list[tuple[Any, Any]], handler: Any) -> Any:
    return next(response for receiver, response in responses if receiver is handler)


def test_without_a_metrics_port_a_worker_writes_no_metrics_files() -> None:
    signals.worker_init.send(sender=None)
    assert metrics.MULTIPROC_ENV not in os.environ


def test_a_worker_empties_its_metrics_directory_of_an_earlier_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a port, an explicit directory and an earlier run's files in it
    monkeypatch.setenv(metrics_server.PORT_ENV, "9464")
    monkeypatch.setenv(metrics.MULTIPROC_ENV, str(tmp_path))
    (tmp_path / "counter_123.db").write_bytes(b"old")
    (tmp_path / "notes.txt").write_text("not ours")
    # When the worker initialises
    responses = signals.worker_init.send(sender=None)
    # Then the earlier samples are gone and nothing else was touched
    assert _response(responses, metrics_server._prepare_directory) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_council_worker_defaults_its_metrics_directory_under_council_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a metrics port and no multiprocess directory
    monkeypatch.setenv(metrics_server.PORT_ENV, "9464")
    monkeypatch.setenv("COUNCIL_HOME", str(tmp_path))
    # When `council worker` chooses the default, and the worker initialises
    metrics_server.default_directory()
    signals.worker_init.send(sender=None)
    # Then the directory is one per port under COUNCIL_HOME
    assert Path(os.environ[metrics.MULTIPROC_ENV]) == tmp_path / "metrics" / "worker-9464"
    assert (tmp_path / "metrics" / "worker-9464").is_dir()


def test_a_worker_with_a_port_and_no_directory_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a port but no directory (a bare `celery worker`)
    monkeypatch.setenv(metrics_server.PORT_ENV, "9464")
    # When the worker initialises, then it stops and says why, instead of losing every pool process's counts
    with pytest.raises(SystemExit, match=metrics.MULTIPROC_ENV):
        signals.worker_init.send(sender=None)


def test_usage_counts_tokens_by_kind_and_cost_and_an_odd_model_name_shows_as_other() -> None:
    # Given the counters before
    before = scrape()
    # When a priced run's usage, and a run whose model name is not a plain identifier, are counted
    metrics.count_usage("unit-prov", "unit-prov/model-1", {"prompt_tokens": 10, "completion_tokens": 3}, 0.25)
    metrics.count_usage("unit-prov", "bad model\n{x}", {"prompt_tokens": 5}, None)
    after = scrape()

    # Then tokens count by kind and the cost by provider and model; the odd name is "other"
    def grew(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    model = {"provider": "unit-prov", "model": "unit-prov/model-1"}
    assert grew("council_tokens_total", kind="prompt", **model) == 10
    assert grew("council_tokens_total", kind="completion", **model) == 3
    assert grew("council_cost_usd_total", **model) == pytest.approx(0.25)
    assert grew("council_tokens_total", kind="prompt", provider="unit-prov", model="other") == 5
    assert "bad model" not in after.decode()
