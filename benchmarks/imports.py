"""`python -m benchmarks import`: see benchmarks/debates.py."""

from __future__ import annotations

from typing import Any

from benchmarks.debates import run_import


def run() -> dict[str, Any]:
    return run_import()
