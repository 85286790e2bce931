"""The latency benchmark's steady rate (benchmarks/latency.py): the rate of run ends while
every thread has a run in flight, read from a batch's timeline."""

from __future__ import annotations

import pytest

from benchmarks.latency import steady_rate


def _timeline(threads: int, runs_each: int, cycle_s: float, fill_s: float) -> list[float]:
    """Each thread starts ``fill_s`` × its index / threads late, then ends a run every cycle."""
    return [fill_s * t / threads + cycle_s * (k + 1) for t in range(threads) for k in range(runs_each)]


def test_the_steady_rate_is_threads_over_the_cycle_whatever_the_fill() -> None:
    # Given 64 threads that each end a run every 2.5 s, started over a 0.8 s fill
    ends = _timeline(threads=64, runs_each=8, cycle_s=2.5, fill_s=0.8)
    # When the steady rate is read
    rate = steady_rate(ends, 64)
    # Then it is 64 runs per 2.5 s: the fill and the drain are not in it
    assert rate == pytest.approx(64 / 2.5, rel=0.02)
    assert steady_rate(_timeline(64, 8, 2.5, fill_s=0.0), 64) == pytest.approx(64 / 2.5, rel=0.02)


def test_a_batch_without_a_window_of_full_occupancy_has_no_steady_rate() -> None:
    # Given two waves of 64 (every run is in the fill or the drain)
    ends = _timeline(threads=64, runs_each=2, cycle_s=2.0, fill_s=0.5)
    # Then there is no steady rate to read, rather than a made-up one
    assert steady_rate(ends, 64) is None
    assert steady_rate([1.0] * 200, 64) is None  # every run ended at once: no window either


def test_the_order_runs_are_listed_in_does_not_matter() -> None:
    ends = _timeline(threads=16, runs_each=6, cycle_s=2.0, fill_s=0.3)
    assert steady_rate(list(reversed(ends)), 16) == steady_rate(ends, 16)
