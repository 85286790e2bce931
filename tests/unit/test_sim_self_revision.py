"""The simulated provider's self-revision rate (issue 34 part 2): in a later round a run
moves its own stance on a head at that rate whether or not it was shown anything, drawn
from agent, head and round, so its control run (the blind briefing) moves alike; conformity
only ever moves the run that was shown stances; without the rate nothing changes."""

from __future__ import annotations

import json
import uuid
from typing import Any

from council.agents.sim_params import self_revision_of
from council.agents.simulated import respond
from council.domain.agent_output import AgentOutput

HEADS = [str(uuid.UUID(int=1000 + i)) for i in range(400)]
MODEL = "council-sim/claude"


def request(
    round_no: int, previous: list[dict[str, Any]] | None = None, heads: list[str] = HEADS[:50]
) -> list[dict[str, str]]:
    briefing: dict[str, Any] = {
        "agent": "claude",
        "mode": "deliberative",
        "round": round_no,
        "thread": {"id": "t-1", "title": "Does X cause Y?", "objective": "Find out."},
        "packet": {"heads": [{"version_id": v, "content": f"head {v}"} for v in heads], "evidence": []},
    }
    if previous:
        briefing["previous_round"] = previous
    user = "Council briefing:\n```json\n" + json.dumps(briefing) + "\n```\n"
    return [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": user}]


def stances(round_no: int, previous: list[dict[str, Any]] | None, **settings: float) -> dict[str, str]:
    """The stance on each of the 400 heads (an answer holds at most 50 claims: 8 requests)."""
    found: dict[str, str] = {}
    for i in range(0, len(HEADS), 50):
        heads = HEADS[i : i + 50]
        shown = [p for p in previous or [] if p["node_version_id"] in heads]
        reply = respond(MODEL, request(round_no, shown, heads), **settings)  # type: ignore[arg-type]
        found |= {c.node_version_id: c.type for c in AgentOutput.model_validate_json(reply.text).claims}
    return found


# Two other agents disputed every head in round 1: the stances a deliberative run is shown.
SHOWN = [
    {"run_id": str(uuid.UUID(int=9000 + i)), "agent": agent, "node_version_id": v, "type": "dispute",
     "confidence": "0.8", "rationale": "Too broad."}
    for v in HEADS
    for i, agent in enumerate(("codex", "glm"))
]  # fmt: skip


def test_without_the_rate_the_answer_is_exactly_as_before() -> None:
    for messages in (request(1), request(2, [p for p in SHOWN if p["node_version_id"] in HEADS[:50]])):
        for conformity in (None, 0.8):
            plain = respond(MODEL, messages, conformity=conformity).text
            assert respond(MODEL, messages, conformity=conformity, self_revision=None).text == plain
            assert respond(MODEL, messages, conformity=conformity, self_revision=0.0).text == plain
    assert self_revision_of({"self_revision": 0}) is None and self_revision_of({}) is None
    assert (
        self_revision_of({"self_revision": 1.7}) == 1.0 and self_revision_of({"self_revision": True}) is None
    )


def test_a_control_revises_as_its_run_and_only_the_shown_run_conforms() -> None:
    rate, conformity = 0.3, 0.6
    first = stances(1, None, conformity=conformity, self_revision=rate)
    shown = stances(2, SHOWN, conformity=conformity, self_revision=rate)
    control = stances(2, None, conformity=conformity, self_revision=rate)  # blind: no stance shown
    revised = {v for v in HEADS if control[v] != first[v]}
    # The control changed only by self-revision, at about the rate (400 heads: 4 standard errors ≈ 0.09)
    assert abs(len(revised) / len(HEADS) - rate) < 0.09
    # Where the control revised, the deliberative run revised the same way (whatever it was shown)
    assert all(shown[v] == control[v] for v in revised)
    # Elsewhere the control held, and the deliberative run either held or took the shown dispute
    kept = [v for v in HEADS if v not in revised]
    assert all(shown[v] in (first[v], "dispute") for v in kept)
    could = [v for v in kept if first[v] != "dispute"]
    moved = sum(1 for v in could if shown[v] == "dispute")
    assert abs(moved / len(could) - conformity) < 4 * (conformity * (1 - conformity) / len(could)) ** 0.5
    # And the same requests answer the same (seeded)
    assert stances(2, None, conformity=conformity, self_revision=rate) == control
