"""`council demo` end to end on a fresh embedded stack (what `make demo` runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil


def _council_processes(home: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(str(home) in part for part in proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return [p for p in found if p.status() != psutil.STATUS_ZOMBIE]


def test_demo_consolidates_replays_and_stops_its_stack(tmp_path: Path) -> None:
    # Given a machine with no configured services
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env["COUNCIL_HOME"] = str(home)
    # When the demo runs
    done = subprocess.run(
        [sys.executable, "-m", "council.cli", "demo", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # Then it succeeds with one consolidation, committed once and replayed
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["ok"] is True
    assert summary["outcomes"] == ["committed", "already_consolidated", "not_ready"]
    assert summary["replay_match"] is True and summary["consolidation_id"]
    assert "round 2 (deliberative)" in done.stderr
    # And it brought down the stack it started
    assert summary["stack"]["left_running"] is False
    assert not (home / "stack.json").exists()
    assert _council_processes(home) == []
