"""An agent's kept answer as a person reads it (the decision record of `council export`).

A run answers with one JSON document (``council.domain.agent_output``), bare or in one
fenced ```json block; pasted as it is, a record shows escaped JSON. Read here instead: its
summary, then one line per proposition it made or revised, claim, vote, fork and pending
action, each in words with its rationale. Any other text (an imported turn's, an answer
that is no such document) is returned as it is, less its blank lines. Pure."""

from __future__ import annotations

import json
from collections.abc import Mapping

from council.domain.answer import json_text

# The parts of an answer document read here; a document with none of them is shown as text.
_PARTS = ("summary", "new_nodes", "new_versions", "claims", "votes", "forks", "pending_actions")


def readable_lines(text: str) -> list[str]:
    """The answer in words, one item a line: the summary first, then what it proposed,
    revised, claimed, voted, forked and left to do."""
    as_text = [line.strip() for line in text.splitlines() if line.strip()] or [""]
    try:
        document = json.loads(json_text(text))
    except ValueError:
        return as_text
    if not isinstance(document, dict) or not any(key in document for key in _PARTS):
        return as_text
    lines = []
    summary = _text(document.get("summary"))
    if summary:
        lines.append(summary)
    for node in _items(document, "new_nodes"):
        lines.append(f"proposes: {_text(node.get('content'))}")
    for version in _items(document, "new_versions"):
        lines.append(
            f"revises node {_short(version.get('logical_node_id'))}: {_text(version.get('content'))}"
        )
    for claim in _items(document, "claims"):
        lines.append(_stance(f"{_text(claim.get('type'))} {_short(claim.get('node_version_id'))}", claim))
    for vote in _items(document, "votes"):
        lines.append(
            _stance(f"votes {_text(vote.get('vote'))} on proposal {_short(vote.get('proposal_id'))}", vote)
        )
    for fork in _items(document, "forks"):
        lines.append(f"forks: {_text(fork.get('label'))}")
    for action in _items(document, "pending_actions"):
        lines.append(
            f"to do: {_text(action.get('description'))} "
            f"(done when: {_text(action.get('acceptance_condition'))})"
        )
    return [line for line in lines if line.strip()] or as_text


def readable(text: str, limit: int) -> str:
    """:func:`readable_lines` joined by newlines, cut to ``limit`` characters (an ellipsis
    marks the cut)."""
    whole = "\n".join(readable_lines(text))
    return whole if len(whole) <= limit else whole[: limit - 1] + "…"


def _items(document: Mapping[str, object], key: str) -> list[Mapping[str, object]]:
    found = document.get(key)
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def _stance(head: str, item: Mapping[str, object]) -> str:
    confidence = item.get("confidence")
    shown = f" ({confidence:.2f})" if isinstance(confidence, int | float) else ""
    rationale = _text(item.get("rationale"))
    return f"{head}{shown}" + (f": {rationale}" if rationale else "")


def _text(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _short(value: object) -> str:
    """An id as the CLI accepts it back (its first 8 characters), a ``ref:`` as it is."""
    if not isinstance(value, str):
        return "?"
    return value if value.startswith("ref:") else value[:8]
