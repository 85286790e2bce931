"""`du-debate` as Du et al.'s harness writes it (docs/guide/observe.md): an object of question →
[agent_contexts, answer], GSM's boxed numbers against a "#### N" truth. Synthetic files of
that shape, written here."""

from __future__ import annotations

import json

import pytest

from council.domain.debates import BadRecord, parse_file

GSM = r"(?:\\boxed\{|####)[^0-9-]{0,3}(-?[0-9][0-9,]*(?:\.[0-9]+)?)"


def _context(question: str, *answers: str) -> list[dict[str, str]]:
    messages = [{"role": "user", "content": question}]
    for answer in answers:
        messages += [{"role": "assistant", "content": f"Working it out. {answer}"},
                     {"role": "user", "content": "Other agents said..."}]  # fmt: skip
    return messages[:-1]


def _du(contexts: dict[str, tuple[list[list[dict[str, str]]], str]]) -> bytes:
    # json.dump of {question: (agent_contexts, answer)}: the tuple becomes a 2-element list
    return json.dumps(contexts).encode()


def test_the_question_keyed_tuple_form_is_read() -> None:
    # Given the object gen_gsm.py dumps: question -> (agent_contexts, answer)
    q1, q2 = "Ann has 3 apples and buys 1,077 more. How many?", "Half of 17?"
    data = _du(
        {
            q1: ([_context(q1, r"\boxed{1,080}", r"\boxed{1080}"),
                  _context(q1, r"\boxed{$1,080.00}", "no box")],
                 "3 + 1077 = <<3+1077=1080>>1080\n#### 1080"),
            q2: ([_context(q2, r"\boxed{8.5}"), _context(q2, r"\boxed{8.50 apples}")], "#### 8.5"),
        }
    )  # fmt: skip
    # When it is read with numbers compared as numbers
    records = parse_file(data, "du-debate", answer_pattern=GSM, numeric=True)
    # Then each question is a record whose id is its position and whose question is the key
    assert [(r.id, r.question) for r in records] == [("0", q1), ("1", q2)]
    first = records[0]
    # "1,080", "1080" and "$1,080.00" are one answer, and the truth "#### 1080" is it
    assert [(t.agent, t.round, t.answer) for t in first.turns] == [
        ("agent-0", 0, "1080"), ("agent-1", 0, "1080"), ("agent-0", 1, "1080"), ("agent-1", 1, None),
    ]  # fmt: skip
    assert first.propositions == (("1080", "1080"),)
    assert first.truth == frozenset({"1080"})
    # Round 1 saw the other agent's round 0
    assert first.turns[2].saw == (1,)
    assert records[1].truth == frozenset({"8.5"}) and {t.answer for t in records[1].turns} == {"8.5"}


def test_without_numeric_answers_stay_text() -> None:
    q = "How many?"
    data = _du({q: ([_context(q, r"\boxed{1,080}"), _context(q, r"\boxed{1080}")], "#### 1080")})
    (record,) = parse_file(data, "du-debate", answer_pattern=GSM)
    assert [t.answer for t in record.turns] == ["1,080", "1080"]
    assert record.truth == frozenset({"1080"})


def test_a_question_whose_value_is_not_a_pair_is_refused() -> None:
    data = json.dumps({"Q?": [[_context("Q?", "(A)")], "A", "extra"]}).encode()
    with pytest.raises(BadRecord, match=r"record 0: a question's value must be \[agent_contexts, answer\]"):
        parse_file(data, "du-debate", answer_pattern=r"\((\w)\)")


def test_the_id_keyed_object_form_still_keeps_its_ids() -> None:
    item = {"question": "Q?", "answer": "(A)", "agent_contexts": [_context("Q?", "(A)")]}
    (record,) = parse_file(json.dumps({"q-7": item}).encode(), "du-debate", answer_pattern=r"\((\w)\)")
    assert record.id == "q-7" and record.truth == frozenset({"a"})


def test_a_stated_model_and_provider_are_every_agents_and_only_du_debate_takes_them() -> None:
    # Given a du-debate file, which names no model
    q = "Half of 17?"
    data = _du({q: ([_context(q, r"\boxed{8.5}"), _context(q, r"\boxed{8.5}")], "#### 8.5")})
    # When it is read as one model's run
    [record] = parse_file(data, "du-debate", answer_pattern=GSM, model="qwen3-14b", provider="alibaba")
    # Then every agent is that model's; without them, none is named
    assert {(a.model, a.provider) for a in record.agents} == {("qwen3-14b", "alibaba")}
    [plain] = parse_file(data, "du-debate", answer_pattern=GSM)
    assert {(a.model, a.provider) for a in plain.agents} == {(None, None)}
    # And a council-debate-v1 file, which names its agents' models, refuses them
    line = json.dumps({"id": "r1", "question": "Q?", "agents": [{"name": "a"}], "turns": []})
    with pytest.raises(BadRecord, match="--model and --provider are for du-debate"):
        parse_file(line.encode(), "council-debate-v1", model="qwen3-14b")
