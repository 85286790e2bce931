"""`python -m benchmarks eval`: see benchmarks/debates.py."""

from __future__ import annotations

from typing import Any

from benchmarks.debates import run_eval


def run() -> dict[str, Any]:
    return run_eval()
