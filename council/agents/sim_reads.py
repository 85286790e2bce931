"""What the simulated agent reads through the ``read_evidence`` tool (``council.agents.simulated``):
the items its briefing left out, read in one tool round before it answers, and the ids the
tool's results carry back."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

READS_PER_ROUND = 8


def first_reads(
    texts: Sequence[tuple[str, str]], fenced: Callable[[str], Mapping[str, object] | None]
) -> tuple[str, ...]:
    """The evidence to read before answering: the items the last briefing left out (up to
    8), when no tool result has come back yet; () once one has."""
    if any(role == "tool" for role, _ in texts):
        return ()
    briefing = next((f for role, t in reversed(texts) if role == "user" and (f := fenced(t))), {})
    left_out = briefing.get("evidence_not_given")
    return tuple(str(e) for e in left_out[:READS_PER_ROUND]) if isinstance(left_out, list) else ()


def read_id(tool_result: str) -> str | None:
    """The evidence id a read_evidence result carries, if it is one."""
    try:
        document = json.loads(tool_result)
    except ValueError:
        return None
    found = document.get("evidence_id") if isinstance(document, dict) else None
    return str(found) if found else None
