"""``python -m benchmarks peer`` without its extra says so, and is not ok, before it starts
anything (no database, no workers)."""

from __future__ import annotations

import pytest

from benchmarks import peer


def test_the_peer_benchmark_says_when_langgraph_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peer, "_installed", lambda module: module == "langgraph")
    result = peer.run()
    assert result["ok"] is False
    assert result["error"] == "not installed: langgraph.checkpoint.postgres — pip install -e '.[peer]'"


def test_a_missing_parent_package_is_not_installed() -> None:
    assert peer._installed("no_such_package_anywhere.sub") is False
