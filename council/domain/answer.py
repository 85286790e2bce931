"""The council's answer (docs/architecture.md §9, `ask` and `export`): which live proposition
it established, and the alternatives, from the propositions answering the question. Pure.

A proposition is established when a live consolidation of it stands and no rival of it —
a member of its alternative set (the options of one question, nodes joined by
``contradicts`` edges) — holds one too. Under ``exclusive_alternatives`` (v3) the committer
never lets two rivals both consolidate; under v1 and v2 they can, and then the council
established nothing: the answer says so (``conflict``) and lists both. Models that think for
themselves word one answer differently, so several consolidated propositions may state it:
the answer is the one with the most independent support groups, then the earliest (then
the lowest version id); the others are listed among the alternatives, consolidated. With
none consolidated, the council established nothing and every live proposition is an
alternative. Alternatives are ordered rivals first — the members of the answer's
alternative set (with none established: of any set) — then by independent support, then
the earliest. A proposition's groups are those its decision counts: under
``exclusive_alternatives`` with each rival's endorsers as derived disputes, named in
their group (``AnswerGroup.derived_runs``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from council.domain.alternatives import components
from council.domain.independence import Group
from council.domain.results.answer import AgentSummary, Alternative, Answer, AnswerGroup
from council.domain.rules import groups_with_rivals
from council.domain.snapshot_shapes import Snapshot

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


def answer_of(
    candidates: Sequence[Candidate],
    contradicts: Collection[tuple[UUID, UUID]] = (),
    sets: Iterable[Collection[UUID]] = (),
) -> Answer:
    """The answer among ``candidates``; ``contradicts``: (from, to) versions of each
    ``contradicts`` edge of the thread; ``sets``: its alternative sets, each as its members'
    head versions (an option set joins options no edge joins)."""
    set_of = _sets(candidates, contradicts, sets)
    consolidated = [c for c in candidates if c.consolidated]
    torn = {
        c.version_id
        for c in consolidated
        for o in consolidated
        if o is not c
        and set_of.get(c.version_id) is not None
        and set_of.get(c.version_id) == set_of.get(o.version_id)
    }
    established = [c for c in consolidated if c.version_id not in torn]
    chosen = min(established, key=_strongest_first) if established else None
    if chosen is not None:
        mine = set_of.get(chosen.version_id)
        rivals = {c.version_id for c in candidates if mine is not None and set_of.get(c.version_id) == mine}
    else:
        rivals = {c.version_id for c in candidates if c.version_id in set_of}
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
    conflict = None
    if torn:
        conflict = (
            f"{len(torn)} rival propositions each hold a live consolidation (a rule set without "
            "exclusive_alternatives let them): "
            + ", ".join(str(v)[:8] for v in sorted(torn, key=str))
            + "; none of them is established"
        )
    if chosen is None:
        return Answer(
            established=False,
            version_id=None,
            content=None,
            support=0,
            support_groups=[],
            dispute_groups=[],
            alternatives=alternatives,
            conflict=conflict,
        )
    return Answer(
        established=True,
        version_id=chosen.version_id,
        content=chosen.content,
        support=len(chosen.support_groups),
        support_groups=list(chosen.support_groups),
        dispute_groups=list(chosen.dispute_groups),
        alternatives=alternatives,
        conflict=conflict,
    )


def _strongest_first(c: Candidate) -> tuple[int, datetime, str]:
    return (-len(c.support_groups), c.created_at, str(c.version_id))


def _sets(
    candidates: Sequence[Candidate],
    contradicts: Collection[tuple[UUID, UUID]],
    sets: Iterable[Collection[UUID]],
) -> dict[UUID, int]:
    """Each candidate in an alternative set with another candidate: the set's index."""
    live = {str(c.version_id) for c in candidates}
    links = [(str(a), str(b)) for a, b in contradicts]
    for members in sets:
        ordered = sorted(str(m) for m in members)
        links.extend((ordered[0], m) for m in ordered[1:])  # none for a set of one (or none)
    joined = components(((a, b) for a, b in links if a != b), live)
    return {UUID(member): index for index, group in enumerate(joined) for member in group}


def answer_groups(snapshot: Snapshot, agent_of: dict[str, str]) -> list[AnswerGroup]:
    """A proposition's independence groups as its decision counts them (under
    exclusive_alternatives: with its rivals' endorsers as derived disputes, named), each
    run's agent from ``agent_of`` (run id → agent; else "(earlier run)")."""
    groups, derived = groups_with_rivals(snapshot)
    return [_answer_group(g, derived, agent_of) for g in groups]


def _answer_group(group: Group, derived: frozenset[str], agent_of: dict[str, str]) -> AnswerGroup:
    return AnswerGroup(
        kind=group.kind,
        agents=sorted({agent_of.get(r, "(earlier run)") for r in group.runs}),
        runs=[UUID(r) for r in group.runs],
        derived_runs=[UUID(r) for r in group.runs if r in derived],
    )


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
