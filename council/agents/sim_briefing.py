"""What the simulated provider reads of a request (``council.agents.simulated``): the briefing
— the last fenced ```json block of a user message — as the values its behaviour needs, and
the evidence it may cite (what an API briefing gave it inline, or it read with the tool)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from council.agents.sim_reads import read_id

_FENCE = re.compile(r"```json[ \t]*\r?\n")


@dataclass(frozen=True)
class Proposal:
    id: str
    evidence: int  # items in the consolidation's evidence index
    invalidated: int  # of those, invalidated now


@dataclass(frozen=True)
class Head:
    version_id: str
    content: str
    rivals: tuple[str, ...] = ()  # its rivals' head versions (options, contradicts edges)


@dataclass(frozen=True)
class Briefing:
    agent: str
    mode: str
    round: int
    phase: str  # blind | propose | cross_review | deliberate | review
    title: str
    thread_id: str
    question: str  # the latest question asked on the thread, else its objective
    asked: str  # everything asked: the objective and every later question
    heads: list[Head]
    evidence: list[str]
    previous: list[Mapping[str, Any]]
    council: list[str]
    own: frozenset[str] = frozenset()  # the propositions its own lineage made (a council's later rounds)
    proposal: Proposal | None = None


def text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI-style content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return "" if content is None else str(content)


def fenced_json(text: str) -> dict[str, Any] | None:
    """The last fenced ```json object of ``text`` (None: there is none)."""
    # raw_decode rather than a closing-fence regex: node contents may hold ``` themselves.
    decoder = json.JSONDecoder()
    for match in reversed(list(_FENCE.finditer(text))):
        try:
            value, _ = decoder.raw_decode(text, match.end())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def read_briefing(texts: Sequence[tuple[str, str]], *, default_agent: str) -> Briefing:
    raw: dict[str, Any] = {}
    for role, text in reversed(texts):
        found = fenced_json(text) if role == "user" else None
        if found is not None:
            raw = found
            break
    packet = _mapping(raw.get("packet"))
    thread = _mapping(raw.get("thread"))
    heads = [
        Head(
            str(h["version_id"]),
            str(h.get("content", "")),
            tuple(str(r["version_id"]) for r in _list(h.get("rivals")) if isinstance(r, Mapping)),
        )
        for h in _list(packet.get("heads"))
        if isinstance(h, Mapping) and h.get("version_id")
    ]
    evidence = [str(e["id"]) for e in _list(packet.get("evidence")) if isinstance(e, Mapping) and e.get("id")]
    if "evidence_texts" in raw:  # an API briefing: the simulated agent cites only what it read
        given = {
            str(e["id"]) for e in _list(raw.get("evidence_texts")) if isinstance(e, Mapping) and e.get("id")
        }
        given |= {read for role, text in texts if role == "tool" and (read := read_id(text))}
        evidence = [e for e in evidence if e in given]
    objective = str(thread.get("objective") or packet.get("objective") or "")
    questions = [str(q) for q in _list(thread.get("questions") or packet.get("questions")) if q]
    mode = str(raw.get("mode") or "independent")
    return Briefing(
        agent=str(raw.get("agent") or default_agent),
        mode=mode,
        round=int(raw["round"]) if isinstance(raw.get("round"), int) else 1,
        phase=str(raw.get("phase") or ("review" if mode == "review" else "blind")),
        title=str(thread.get("title") or packet.get("title") or ""),
        thread_id=str(thread.get("id") or packet.get("thread_id") or ""),
        question=questions[-1] if questions else objective,
        asked="\n".join([objective, *questions]),
        heads=heads,
        evidence=evidence,
        previous=[p for p in _list(raw.get("previous_round")) if isinstance(p, Mapping)],
        council=[str(a) for a in _list(raw.get("council"))],
        own=frozenset(str(v) for v in _list(raw.get("your_propositions"))),
        proposal=_proposal(_mapping(raw.get("proposal"))),
    )


def _proposal(raw: Mapping[str, Any]) -> Proposal | None:
    if not raw.get("id"):
        return None
    evidence = [e for e in _list(raw.get("evidence")) if isinstance(e, Mapping)]
    fallen = sum(1 for e in evidence if e.get("validity") == "invalidated")
    return Proposal(str(raw["id"]), len(evidence), fallen)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
