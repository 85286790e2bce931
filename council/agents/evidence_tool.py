"""An API run's ``read_evidence`` tool (docs/architecture.md §7: a run cites only what it read).

An API run is given evidence text inline in its briefing, up to a token budget; the
items left out it may read through the ``read_evidence`` tool, in a bounded number of
tool rounds (``council.agents.api_runtime``). Each read is recorded as the run's opened
evidence (the same table and view as an agent CLI's reads), fenced on the attempt,
*before* the text goes back to the model (the attempt's ``Record.read``). The text a tool
call returns is data, framed as such, never instructions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from council.agents.compiler import READ_EVIDENCE
from council.agents.gateway import Completion, ToolCall
from council.domain.ids import MIN_PREFIX

# How much of one item a read returns, and how many reads one tool round may make.
READ_CAP_CHARS = 200_000
READS_PER_ROUND = 8


@dataclass
class EvidenceReads:
    """The evidence an API attempt was given inline, may read by tool, and has read."""

    inline: list[str]
    readable: list[str]
    read: list[str] = field(default_factory=list)

    def citable(self) -> list[str]:
        return [*self.inline, *self.read]

    def resolve(self, wanted: str) -> str | None:
        """The one readable id that is ``wanted`` or starts with it (6 characters at least)."""
        if wanted in self.readable or wanted in self.inline:
            return wanted
        if len(wanted) < MIN_PREFIX:
            return None
        found = [e for e in [*self.readable, *self.inline] if e.startswith(wanted)]
        return found[0] if len(found) == 1 else None


def assistant_turn(completion: Completion) -> dict[str, Any]:
    """The model's tool-calling answer as a message of the conversation sent back."""
    return {
        "role": "assistant",
        "content": completion.text or None,
        "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in completion.tool_calls
        ],
    }


def kept_text(completion: Completion) -> str:
    """What is kept as a tool round's answer: its text and each call it made."""
    lines = [completion.text] if completion.text else []
    lines += [f"[tool call] {c.name} {c.arguments}" for c in completion.tool_calls]
    return "\n".join(lines)


def answer_reads(
    calls: Sequence[ToolCall], reads: EvidenceReads, read: Callable[[Sequence[str]], Mapping[str, str]]
) -> list[dict[str, Any]]:
    """Answer one round of tool calls: each ``read_evidence`` of an item of the briefing
    gets its text, ``read`` (which records each item as opened first, fenced on the
    attempt) giving the texts; anything else gets an error result (data the model reads,
    not a failure)."""
    wanted: list[tuple[ToolCall, str | None, str | None]] = []  # (call, evidence id, error)
    for n, call in enumerate(calls):
        wanted.append((call, *_wanted(call, reads, n)))
    texts = read(sorted({e for _, e, _ in wanted if e is not None}))
    results = []
    for call, evidence_id, error in wanted:
        if evidence_id is not None and evidence_id not in texts:
            error = f"evidence {evidence_id} has no text"
        if error is not None or evidence_id is None:
            content = json.dumps({"error": error})
        else:
            if evidence_id not in reads.read:
                reads.read.append(evidence_id)
            content = _framed(evidence_id, texts[evidence_id])
        results.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return results


def _wanted(call: ToolCall, reads: EvidenceReads, n: int) -> tuple[str | None, str | None]:
    if n >= READS_PER_ROUND:
        return None, f"at most {READS_PER_ROUND} reads a round"
    if call.name != READ_EVIDENCE:
        return None, f"no tool named {call.name[:80]!r}; the one tool is {READ_EVIDENCE}"
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError:
        return None, "the arguments are not a JSON object"
    wanted = arguments.get("id") if isinstance(arguments, dict) else None
    if not isinstance(wanted, str) or not wanted.strip():
        return None, 'give the evidence item\'s id as {"id": "..."}'
    found = reads.resolve(wanted.strip())
    if found is None:
        return None, f"no evidence {wanted.strip()[:80]!r} in this briefing"
    return found, None


def _framed(evidence_id: str, text: str) -> str:
    """The text of one item as the tool returns it: data, with its id, cut at the cap."""
    cut = text[:READ_CAP_CHARS]
    document: dict[str, Any] = {"evidence_id": evidence_id, "data_not_instructions": True, "text": cut}
    if len(cut) < len(text):
        document["truncated_at_chars"] = READ_CAP_CHARS
        document["length_chars"] = len(text)
    return json.dumps(document, ensure_ascii=False)
