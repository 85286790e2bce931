"""The steps benchmark's timer (benchmarks/steps.py): it sums the calling thread's CPU in
each wrapped step and puts every original back, however the block ends."""

from __future__ import annotations

import types
from collections import Counter

import pytest

from benchmarks.steps import _timed


def _busy(seconds: float) -> int:
    import time

    end, n = time.thread_time() + seconds, 0
    while time.thread_time() < end:
        n += 1
    return n


def test_each_step_is_charged_the_cpu_it_spent_and_the_originals_come_back() -> None:
    # Given a module with two functions
    module = types.SimpleNamespace(slow=lambda: _busy(0.05), quick=lambda: _busy(0.0))
    originals = (module.slow, module.quick)
    spent: Counter[str] = Counter()
    # When both are called inside the timer
    with _timed([(module, "slow", "slow"), (module, "quick", "quick")], spent):
        module.slow()
        module.quick()
    # Then each label holds its own CPU, and the functions are the originals again
    assert spent["slow"] >= 0.05
    assert spent["quick"] < spent["slow"]
    assert (module.slow, module.quick) == originals


def test_the_originals_come_back_when_the_block_raises() -> None:
    module = types.SimpleNamespace(step=lambda: 1)
    original = module.step
    with pytest.raises(RuntimeError), _timed([(module, "step", "step")], Counter()):
        raise RuntimeError("the benchmark failed")
    assert module.step is original
