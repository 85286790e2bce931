"""What `council import` reads is bounded and typed as it is read (issue 44, docs/operations/security.md):
a nesting limit (no RecursionError), the record limit enforced while reading, an answer
pattern under a time limit, duplicate keys, non-finite numbers and lone surrogates refused
— each a BadRecord with its reason (exit 2 at the CLI: tests/e2e/test_observe.py)."""

from __future__ import annotations

import json
import time

import pytest

from council.domain import answer_patterns, debates, strict_json
from council.domain.answer_patterns import AnswerPattern, PatternTooSlow
from council.domain.debates import BadRecord, parse_file

ANSWER = r"answer: (\w+)"


def _line(rid: str, **extra: object) -> str:
    record = {
        "id": rid,
        "question": "Which?",
        "options": {"A": "one", "B": "two"},
        "agents": [{"name": "a", "model": "openai/m"}],
        "turns": [{"agent": "a", "round": 1, "answer": "A"}],
        **extra,
    }
    return json.dumps(record)


def _du(answer: str = "answer: A") -> dict[str, object]:
    return {
        "question": "Which?",
        "answer": "answer: A",
        "agent_contexts": [[{"role": "user", "content": "q"}, {"role": "assistant", "content": answer}]],
    }


@pytest.mark.parametrize(
    ("data", "fmt", "reason"),
    [
        ("[" * 200_000 + "]" * 200_000, "du-debate", "nested"),
        ('{"id": "r", "id": "s"}', "council-debate-v1", "appears twice"),
        ('[{"question": "q", "question": "r"}]', "du-debate", "appears twice"),
        (
            '{"q1": [[[{"role": "assistant", "content": "answer: A"}]], "A"], "q1": [[], "b"]}',
            "du-debate",
            "appears twice",
        ),
        ('[{"question": "q", "answer": NaN, "agent_contexts": []}]', "du-debate", "NaN"),
        ('[{"question": "q", "answer": 1e999, "agent_contexts": []}]', "du-debate", "too large"),
        ('[{"question": "\\ud800", "agent_contexts": []}]', "du-debate", "lone surrogate"),
        ('{"id": "r\\udfff"}', "council-debate-v1", "lone surrogate"),
        ('{"id": "r", "confidence": Infinity}', "council-debate-v1", "Infinity"),
    ],
    ids=["deep", "dup-line", "dup-item", "dup-question", "nan", "huge", "surrogate", "surrogate-line", "inf"],
)
def test_json_that_python_reads_but_council_does_not_take_is_refused(
    data: str, fmt: str, reason: str
) -> None:
    with pytest.raises(BadRecord) as refused:
        parse_file(data.encode(), fmt, answer_pattern=ANSWER)  # type: ignore[arg-type]
    assert reason in str(refused.value), refused.value


def test_the_record_limit_holds_while_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a limit of 3 records, and files of 4 whose last record is broken
    monkeypatch.setattr(debates, "MAX_RECORDS", 3)
    lines = [_line(str(i)) for i in range(3)] + ["{not json"]
    items = [_du() for _ in range(3)] + ["broken"]
    # When they are read, Then the 4th record is refused as one too many, never parsed
    for data, fmt in (("\n".join(lines), "council-debate-v1"), (json.dumps(items), "du-debate")):
        with pytest.raises(BadRecord) as refused:
            parse_file(data.encode(), fmt, answer_pattern=ANSWER)  # type: ignore[arg-type]
        assert "more than 3 records" in str(refused.value), refused.value


def test_items_stop_at_the_limit_before_reading_the_rest() -> None:
    # A list whose element past the limit is not even JSON: the limit speaks first
    with pytest.raises(strict_json.JsonRefused, match="more than 2 records"):
        list(strict_json.items("[1, 2, not json at all", limit=2, what="records"))
    assert list(strict_json.items(' {"a": [1], "b": {"c": 2}} ', limit=2, what="records")) == [
        ("a", [1]),
        ("b", {"c": 2}),
    ]


def test_an_answer_pattern_that_backtracks_without_end_is_stopped_within_its_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the pattern of issue 44 and answers it almost matches
    data = json.dumps([_du("a" * 5000 + "!") for _ in range(50)]).encode()
    started = time.monotonic()
    # When the file is read with it, on a budget of a second
    pattern = AnswerPattern(r"(a+)+$", budget_s=1.0)
    with pytest.raises(PatternTooSlow, match="nested quantifiers"):
        for _ in range(50):
            pattern.last("a" * 5000 + "!")
    # Then it stops near the budget, not after minutes
    assert time.monotonic() - started < 10
    monkeypatch.setattr(answer_patterns, "BUDGET_S", 1.0)
    with pytest.raises(BadRecord, match="ran past its 1 s"):
        debates.parse_du_debate(data.decode(), r"(a+)+$")
    # And an ordinary pattern reads as before
    assert parse_file(json.dumps([_du()]).encode(), "du-debate", answer_pattern=ANSWER)[0].truth == {"a"}
