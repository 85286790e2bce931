"""The tasks' retry decision (council/workers/retrying.py): transient errors are retried by the
one policy's countdown, spent retries end in an ERROR line, anything else is raised.
A small stand-in for Celery's task records what it is asked (no broker is needed)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

from council.agents.errors import UnreachableLLMError
from council.domain.retry import RetryAt
from council.errors import BadInput, TransientDatabaseError
from council.workers.retrying import POLICY, retry_at, retry_or_leave


class _Retry(Exception):
    pass


@dataclass
class _Request:
    retries: int


@dataclass
class _Task:
    retries: int
    asked: list[dict[str, Any]] = field(default_factory=list)

    @property
    def request(self) -> _Request:
        return _Request(self.retries)

    def retry(self, **kwargs: Any) -> _Retry:
        self.asked.append(kwargs)
        return _Retry()


def test_a_transient_error_is_retried_after_the_policys_countdown() -> None:
    for retries in range(POLICY.max_retries):
        task = _Task(retries)
        error = TransientDatabaseError("connection refused")
        with pytest.raises(_Retry):
            retry_or_leave(task, error, work="evaluation", found_by="finds it")
        [asked] = task.asked
        assert asked["exc"] is error and asked["max_retries"] == POLICY.max_retries
        assert 0 <= asked["countdown"] <= min(POLICY.cap_s, POLICY.base_s * 2**retries)


def test_spent_retries_end_in_an_error_line_and_leave_the_work(caplog: pytest.LogCaptureFixture) -> None:
    task = _Task(POLICY.max_retries)
    error = TransientDatabaseError("connection failed:\n  server closed the connection")
    with caplog.at_level(logging.ERROR, logger="council.workers"):
        retry_or_leave(task, error, work="cascade step", found_by="finds continuations")
    assert task.asked == []
    [record] = caplog.records
    message = record.getMessage()
    assert record.levelno == logging.ERROR and "\n" not in message
    assert message.startswith(f"cascade step: gave up after {POLICY.max_retries} retries")
    assert "left for the sweep, which finds continuations" in message
    assert "TransientDatabaseError: connection failed: server closed the connection" in message


def test_a_permanent_error_is_raised_at_once() -> None:
    task = _Task(0)
    with pytest.raises(BadInput):
        retry_or_leave(task, BadInput("no such version"), work="evaluation", found_by="x")
    assert task.asked == []


def test_a_run_whose_endpoint_refused_is_retried_on_the_short_schedule() -> None:
    # Given a run's try cut off by an endpoint that refused the connection, at every retry
    for retries in range(POLICY.max_retries):
        task = _Task(retries)
        error = UnreachableLLMError("openai/m: cannot connect to 127.0.0.1:9: connection refused")
        # When the task asks the policy for its retry
        with pytest.raises(_Retry):
            retry_at(task, RetryAt(3, error), ("run-id",), {})
        # Then it is retried, holding its attempt, within the short schedule's ceiling
        [asked] = task.asked
        assert asked["kwargs"] == {"held_attempt": 3}
        ceiling = min(POLICY.unreachable_cap_s, POLICY.unreachable_base_s * 2**retries)
        assert 0 <= asked["countdown"] <= ceiling
