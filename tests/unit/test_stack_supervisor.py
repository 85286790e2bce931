"""The supervisor's restart backoff and exit descriptions (council/stack/supervisor.py)."""

from __future__ import annotations

import signal

from council.stack.supervisor import MAX_BACKOFF_S, _backoff, _describe


def test_backoff_doubles_per_quick_failure_and_is_bounded() -> None:
    # Given a process that keeps exiting soon after it starts
    # When the supervisor schedules its restarts
    delays = [_backoff(failures) for failures in range(1, 10)]
    # Then it waits 1 s, doubling each time, never more than the bound
    assert delays == [1, 2, 4, 8, 16, 30, 30, 30, 30]
    assert max(delays) == MAX_BACKOFF_S


def test_exits_are_described_by_code_or_signal() -> None:
    assert _describe(0) == "code 0"
    assert _describe(3) == "code 3"
    assert _describe(-signal.SIGKILL) == "signal SIGKILL"
    assert _describe(-200) == "signal 200"
