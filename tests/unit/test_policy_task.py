"""The tasks' base class (council/workers/retrying.py PolicyTask) applies the one retry policy
to what a task raises or returns, so no task catches an error to retry it. Run in
process (Celery's ``apply``: a retry runs again at once), on an app of its own."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from celery import Celery

from council.domain.retry import RetryAt
from council.errors import BadInput, TransientDatabaseError
from council.workers import tasks
from council.workers.retrying import POLICY, PolicyTask

app = Celery("policy-task-test", set_as_current=False)
tries: list[dict[str, Any]] = []


@app.task(base=PolicyTask, bind=True, work="flaky work on {n} id(s)", found_by="finds it again")
def flaky(self: PolicyTask, ids: list[str], failures: int, error: str = "transient") -> dict[str, Any]:
    tries.append({"try_no": self.try_no, "last_try": self.last_try})
    if len(tries) <= failures:
        raise TransientDatabaseError("connection refused") if error == "transient" else BadInput("no such id")
    return {"done": ids}


@app.task(base=PolicyTask, bind=True, work="run")
def asks_again(self: PolicyTask, run_id: str, cut_off: int, held_attempt: int | None = None) -> Any:
    tries.append({"held_attempt": held_attempt, "last_try": self.last_try})
    if self.last_try:
        return {"status": "failed"}  # a run's last try ends the run itself
    return RetryAt(cut_off, TransientDatabaseError("server closed the connection"))


@pytest.fixture(autouse=True)
def _fresh() -> None:
    tries.clear()


def test_a_transient_error_is_retried_by_the_policy_until_it_passes() -> None:
    assert flaky.apply(args=[["a"], 2]).get() == {"done": ["a"]}
    assert [t["try_no"] for t in tries] == [1, 2, 3]


def test_spent_retries_leave_the_work_to_the_sweep_with_an_error_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="council.workers"):
        left = flaky.apply(args=[["a", "b"], 100]).get()
    assert left == {"left_for_sweep": ["a", "b"]}
    assert len(tries) == POLICY.max_retries + 1 and tries[-1]["last_try"]
    [record] = caplog.records
    message = record.getMessage()
    assert message.startswith(f"flaky work on 2 id(s): gave up after {POLICY.max_retries} retries")
    assert "left for the sweep, which finds it again" in message


def test_a_permanent_error_is_raised_at_once() -> None:
    with pytest.raises(BadInput):
        flaky.apply(args=[["a"], 1], kwargs={"error": "permanent"}).get()
    assert len(tries) == 1


def test_a_retry_at_outcome_is_retried_with_the_attempt_it_held_until_the_last_try() -> None:
    assert asks_again.apply(args=["run-1", 7]).get() == {"status": "failed"}
    assert [t["held_attempt"] for t in tries] == [None] + [7] * POLICY.max_retries
    assert [t["last_try"] for t in tries] == [False] * POLICY.max_retries + [True]


def test_every_worker_task_but_the_baseline_runs_under_the_policy() -> None:
    under = {
        t.name: (t.work, t.found_by)
        for t in (tasks.execute_run, tasks.evaluate_nodes, tasks.sweep, tasks.cascade, tasks.reverify)
        if isinstance(t, PolicyTask)
    }
    assert len(under) == 5 and all(work and found_by for work, found_by in under.values())
