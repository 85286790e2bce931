"""The decision record's Markdown escapes stored text only where Markdown would read it as
markup, and reads an agent's JSON answer as words (issue 45)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from council.domain.decision_markdown import md
from council.domain.readable_answer import readable, readable_lines


@pytest.mark.parametrize(
    "plain",
    [
        "council-default-v1",
        "2 support group(s), 2 required.",
        "status open: head version (v1) = 'kept' \"quoted\" $0.04 + 3! 50% {x} ^2",
        "snake_case_name and C:\\Users\\me",
        "a - b - c",
        "# not at a line start",
    ],
)
def test_ordinary_text_keeps_its_punctuation(plain: str) -> None:
    assert md(plain) == plain


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("[link](javascript:alert(1))", "\\[link\\](javascript:alert(1))"),
        ("![img](x.png)", "!\\[img\\](x.png)"),
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("&amp; &#x3C;", "&amp;amp; &amp;#x3C;"),
        ("`code` **bold** *em*", "\\`code\\` \\*\\*bold\\*\\* \\*em\\*"),
        ("_em_ and __strong__", "\\_em\\_ and \\_\\_strong\\_\\_"),
        ("~~gone~~", "\\~\\~gone\\~\\~"),
        ("| a | b |\n|---|---|", "\\| a \\| b \\| \\|---\\|---\\|"),
        ("\\* stays a backslash", "\\\\\\* stays a backslash"),
        ("ends in a backslash \\", "ends in a backslash \\\\"),
        ("a title #", "a title \\#"),
        ("a title ##", "a title \\##"),
        ("line one\n# line two\n> quoted", "line one # line two &gt; quoted"),
    ],
)
def test_markup_in_stored_text_is_escaped_minimally(stored: str, shown: str) -> None:
    assert md(stored) == shown


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("# heading", "\\# heading"),
        ("- item", "\\- item"),
        ("+ item", "\\+ item"),
        ("= underline", "\\= underline"),
        ("1. first", "1\\. first"),
        ("2) second", "2\\) second"),
        ("plain - text (kept)", "plain - text (kept)"),
    ],
)
def test_a_text_that_opens_a_list_item_has_its_block_marker_escaped(stored: str, shown: str) -> None:
    assert md(stored, opens_block=True) == shown


ANSWER = {
    "summary": "WAL lets\n readers run.",
    "new_nodes": [{"ref": "a", "content": "Readers never block"}],
    "new_versions": [{"logical_node_id": "11112222-3333-4444-5555-666677778888", "content": "Revised"}],
    "claims": [{"node_version_id": "ref:a", "type": "endorse", "confidence": 0.75, "rationale": "docs"}],
    "votes": [{"proposal_id": "99990000-1111-2222-3333-444455556666", "vote": "dispute"}],
    "forks": [{"kind": "node", "label": "maybe", "divergence_type": "claim"}],
    "pending_actions": [{"description": "measure", "acceptance_condition": "p99 < 5 ms"}],
}
WORDS = [
    "WAL lets readers run.",
    "proposes: Readers never block",
    "revises node 11112222: Revised",
    "endorse ref:a (0.75): docs",
    "votes dispute on proposal 99990000",
    "forks: maybe",
    "to do: measure (done when: p99 < 5 ms)",
]


@pytest.mark.parametrize("wrap", [lambda t: t, lambda t: f"```json\n{t}\n```"])
def test_an_agents_json_answer_reads_as_words(wrap: Callable[[str], str]) -> None:
    assert readable_lines(wrap(json.dumps(ANSWER))) == WORDS


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("A plain answer.\n\nWith two paragraphs.", ["A plain answer.", "With two paragraphs."]),
        ('{"unrelated": 1}', ['{"unrelated": 1}']),
        ("[1, 2]", ["[1, 2]"]),
        ('{"summary": "", "claims": []}', ['{"summary": "", "claims": []}']),
        ("", [""]),
    ],
)
def test_other_text_is_kept_as_it_is(text: str, lines: list[str]) -> None:
    assert readable_lines(text) == lines


def test_a_long_reading_is_cut_with_an_ellipsis() -> None:
    assert readable("x" * 50, 10) == "x" * 9 + "…"
    assert readable("short", 10) == "short"
