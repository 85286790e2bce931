"""The fake model that thinks for itself (tests/fakes/minded_model.py) on a multiple-choice
question: it picks one option, endorses it and disputes its rivals, proposes nothing of its
own; on any other question its proposition carries its confidence."""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.minded_model import Mind, answer


def _messages(phase: str, heads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    briefing = {"phase": phase, "thread": {"objective": "Which store?"}, "packet": {"heads": heads}}
    return [{"role": "user", "content": "briefing:\n```json\n" + json.dumps(briefing) + "\n```\n"}]


OPTIONS = [
    {"version_id": "a", "content": "A: SQLite", "rivals": [{"version_id": "b"}]},
    {"version_id": "b", "content": "B: Postgres", "rivals": [{"version_id": "a"}]},
]


def test_it_endorses_its_option_and_disputes_the_rival_without_proposing() -> None:
    for mind, picked in (
        (Mind("yes", 0.9, 0), "a"),
        (Mind("no", 0.7, 1), "b"),
        (Mind("yes", 0.8, 2, option="B"), "b"),
    ):
        for phase in ("propose", "cross_review", "deliberate"):
            output = json.loads(answer(mind, "m", _messages(phase, OPTIONS)))
            stances = {c["node_version_id"]: (c["type"], c["confidence"]) for c in output["claims"]}
            other = "b" if picked == "a" else "a"
            assert stances == {picked: ("endorse", mind.confidence), other: ("dispute", mind.confidence)}
            assert "new_nodes" not in output


def test_its_own_proposition_carries_its_confidence() -> None:
    output = json.loads(answer(Mind("no", 0.7, 2), "m", _messages("propose", [])))
    [mine] = output["new_nodes"]
    assert mine["confidence"] == 0.7
