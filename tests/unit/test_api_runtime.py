"""The API runtime's side of the port (``council.agents.api_runtime``), on a scripted
gateway and an in-memory record: its tool rounds are bounded over the whole attempt,
re-prompt included, and what it read before a re-prompt stays citable after it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from council.agents import api_runtime, gateway
from council.agents.compiler import READ_EVIDENCE
from council.agents.gateway import Completion, ToolCall
from council.agents.runtime import Ask, Opened
from council.domain.bill import Bill
from council.domain.profile import Profile
from council.domain.requests import StoredRequest

PROFILE = Profile(name="alpha", model="council-sim/alpha", provider="council-sim", simulated=True)
GIVEN, LEFT_OUT = "a" * 32, "b" * 32
BRIEFING = {"evidence_texts": [{"id": GIVEN, "text": "given"}], "evidence_not_given": [LEFT_OUT]}
REQUEST = cast(
    StoredRequest,
    {
        "model": PROFILE.model,
        "messages": [{"role": "user", "content": "```json\n" + json.dumps(BRIEFING) + "\n```"}],
        "params": {},
        "tools": [{"type": "function", "function": {"name": READ_EVIDENCE}}],
        "tool_turns": 1,
    },
)


@dataclass
class MemoryRecord:
    bill: Bill = field(default_factory=Bill)
    kept: list[tuple[int, str]] = field(default_factory=list)
    reads: list[list[str]] = field(default_factory=list)
    started: float = 0.0

    def billed(
        self, tokens: Mapping[str, object] | None, cost_usd: float | None, unpriced: str | None
    ) -> int:
        self.bill.add(tokens, cost_usd, unpriced)
        return self.bill.calls - 1

    def keep(self, round_no: int, text: str) -> None:
        self.kept.append((round_no, text))

    def evidence(self, ids: Sequence[str]) -> Mapping[str, str]:
        return {}

    def read(self, ids: Sequence[str], tool: str) -> Mapping[str, str]:
        self.reads.append(list(ids))
        return {e: f"text of {e}" for e in ids}

    def trace(self, trace: Mapping[str, object], opened: Sequence[Opened] = ()) -> None:
        pass


def _read(evidence_id: str) -> Completion:
    call = ToolCall(id="c1", name=READ_EVIDENCE, arguments=json.dumps({"id": evidence_id}))
    return Completion("", {"prompt_tokens": 1}, 0.0, PROFILE.model, True, tool_calls=(call,))


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> tuple[list[Completion], list[list[dict[str, Any]]]]:
    script: list[Completion] = []
    sent: list[list[dict[str, Any]]] = []

    def complete(model: str, messages: Sequence[Mapping[str, Any]], params: Any, **kw: Any) -> Completion:
        sent.append([dict(m) for m in messages])
        return script.pop(0)

    monkeypatch.setattr(gateway, "complete", complete)
    return script, sent


def test_the_tool_rounds_are_bounded_over_the_attempt_and_reads_stay_citable_after_a_re_prompt(
    answers: tuple[list[Completion], list[list[dict[str, Any]]]],
) -> None:
    script, sent = answers
    # Given a model that reads the item left out, then keeps asking to read past its one tool round
    script += [_read(LEFT_OUT), _read(LEFT_OUT), _read(LEFT_OUT)]
    record = MemoryRecord()
    # When the runtime is asked, then re-prompted with the reason its answer was refused
    first = api_runtime.API.converse(Ask(REQUEST), PROFILE, record)
    assert first.refused == "asks for tools after its 1 rounds of tool calls: answer now"
    second = api_runtime.API.converse(Ask(REQUEST).reprompted(first, first.refused), PROFILE, record)
    # Then the re-prompt is given no tool round of its own: its call is refused too, unanswered
    assert second.refused == first.refused
    # and the one read was recorded once, before its text went back, and every tool call was kept
    assert record.reads == [[LEFT_OUT]]
    assert [r for r, _ in record.kept] == [0, 1, 2] and first.round == 1 and second.round == 2
    # and the re-prompt continues the conversation: the tool round, the refused call, the reason
    last = sent[2]
    assert [m["role"] for m in last] == ["user", "assistant", "tool", "assistant", "user"]
    assert first.refused in last[-1]["content"]
    # and what it read before the re-prompt is still citable after it, beside what it was given
    assert second.citable == (GIVEN, LEFT_OUT)
    assert record.bill.calls == 3 and record.bill.usage["tool_rounds"] == 1


def test_the_evidence_given_inline_is_opened_with_the_request() -> None:
    # Given an API request whose briefing gives one item inline
    # When the runtime says what the request gives
    given = api_runtime.API.given(REQUEST)
    # Then that item is recorded as read inline, from the briefing
    assert given == [{"evidence_id": GIVEN, "file": "inline", "tool": "briefing"}]
