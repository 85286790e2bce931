"""The council's answer (docs/architecture.md §9, `ask` and `export`): which live proposition
it established, and the alternatives, from the propositions answering the question. Pure.

A proposition is established when a live consolidation of it stands. Models that think for
themselves word one answer differently, so several consolidated propositions may state it:
the answer is the one with the most independent support groups, then the earliest (then
the lowest version id); the others are listed among the alternatives, consolidated. With
none consolidated, the council established nothing and every live proposition is an
alternative. Alternatives are ordered rivals first — those joined to the answer or to one
another by a ``contradicts`` edge (what the council holds to exclude one another) — then
by independent support, then the earliest.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from council.domain.results.answer import AgentSummary, Alternative, Answer, AnswerGroup

# The statuses of a proposition that still answers the question (killed and orphaned do not).
LIVE_STATUSES = ("open", "tentative", "resolved")


@dataclass(frozen=True)
class Candidate:
    """A live proposition answering the question, as the answer is chosen among them."""

    version_id: UUID
    content: str
    consolidated: bool
    created_at: datetime
    support_groups: tuple[AnswerGroup, ...]
    dispute_groups: tuple[AnswerGroup, ...]


def answer_of(candidates: Sequence[Candidate], contradicts: Collection[tuple[UUID, UUID]] = ()) -> Answer:
    """The answer among ``candidates``; ``contradicts``: (from, to) versions of each
    ``contradicts`` edge of the thread."""
    established = [c for c in candidates if c.consolidated]
    chosen = min(established, key=_strongest_first) if established else None
    rivals = _rivals(candidates, contradicts)
    others = sorted(
        (c for c in candidates if chosen is None or c.version_id != chosen.version_id),
        key=lambda c: (c.version_id not in rivals, *_strongest_first(c)),
    )
    alternatives = [
        Alternative(
            version_id=c.version_id,
            content=c.content,
            consolidated=c.consolidated,
            rival=c.version_id in rivals,
            support=len(c.support_groups),
            disputes=len(c.dispute_groups),
            support_groups=list(c.support_groups),
            dispute_groups=list(c.dispute_groups),
        )
        for c in others
    ]
    if chosen is None:
        return Answer(
            established=False,
            version_id=None,
            content=None,
            support=0,
            support_groups=[],
            dispute_groups=[],
            alternatives=alternatives,
        )
    return Answer(
        established=True,
        version_id=chosen.version_id,
        content=chosen.content,
        support=len(chosen.support_groups),
        support_groups=list(chosen.support_groups),
        dispute_groups=list(chosen.dispute_groups),
        alternatives=alternatives,
    )


def _strongest_first(c: Candidate) -> tuple[int, datetime, str]:
    return (-len(c.support_groups), c.created_at, str(c.version_id))


def _rivals(candidates: Sequence[Candidate], contradicts: Collection[tuple[UUID, UUID]]) -> set[UUID]:
    """The candidates a ``contradicts`` edge joins to another candidate."""
    live = {c.version_id for c in candidates}
    found: set[UUID] = set()
    for a, b in contradicts:
        if a in live and b in live and a != b:
            found |= {a, b}
    return found


def json_text(text: str) -> str:
    """An answer's JSON document: a bare one, or one fenced ```json block around it."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    return stripped


def summary_of(answer_text: str) -> str | None:
    """The ``summary`` of an agent's kept answer (a JSON document, bare or in one fenced
    ```json block); None when it has none."""
    try:
        document = json.loads(json_text(answer_text))
    except ValueError:
        return None
    found = document.get("summary") if isinstance(document, dict) else None
    return " ".join(found.split()) if isinstance(found, str) and found.strip() else None


def summaries(last_answers: Sequence[tuple[str, UUID, int, str]]) -> list[AgentSummary]:
    """Each agent's summary from (agent, run, round, kept answer text) of its last answered
    run, by agent; an answer without a summary gives none."""
    found = []
    for agent, run_id, round_no, text in sorted(last_answers):
        summary = summary_of(text)
        if summary is not None:
            found.append(AgentSummary(agent=agent, run_id=run_id, round=round_no, summary=summary))
    return found
