"""Stopping the worker processes tests and benchmarks start, each in its own session."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence


def stop_groups(procs: Sequence[subprocess.Popen[bytes]], grace_s: float) -> None:
    """SIGTERM every process group (a worker and its pool), wait up to ``grace_s``
    for each, then SIGKILL what is left."""
    for proc in procs:
        _signal_group(proc, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait(10)


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
