"""A simulated agent in a council (``council.agents.simulated``; docs/architecture.md §7):
it thinks for itself, deterministically.

- *propose*: it holds a view on what the thread asks — a verdict drawn from its temperament
  and the question (``sim_temper.view_of``) — and words its own proposition of it in its own
  way (``sim_temper.wording``): no two agents write the same text, and none copies another's.
  Heads already on the thread it judges as in the cross-review.
- *cross_review*: it reads each proposition it is shown that its lineage did not make: one
  stating its own verdict it endorses, one stating the other it disputes, at the confidence
  of its view; a proposition without a verdict marker (a person's) it judges by a draw of its
  own, per agent and version (its temperament's shares).
- *deliberate*: as any deliberative round (``sim_judge``: the previous round's majority moves
  it at its temperament's ``follow`` share or a stated ``conformity``; ``self_revision``),
  starting from the same reading; its own propositions it holds.

A multiple-choice question (heads with rivals and no verdict marker: its options) it answers
by picking one option of each set — the question's own draw for one verdict, the next
option for the other — endorsing it and disputing its rivals, in every phase; proposing,
it endorses its pick rather than wording it anew. Rivals that state verdicts it reads as
any proposition, so it endorses one and disputes the other.
"""

from __future__ import annotations

import random

from council.agents.sim_briefing import Briefing, Head
from council.agents.sim_judge import READINGS, Judge, cites, explore, judge_heads, slug
from council.agents.sim_temper import (
    Stance,
    View,
    confidence,
    own_stance,
    seeded,
    temperament_for,
    verdict_in,
    view_of,
    wording,
)
from council.domain.agent_output import AgentOutput, ClaimOut, NewNode


def council_answer(
    b: Briefing, rng: random.Random, conformity: float | None = None, self_revision: float | None = None
) -> AgentOutput:
    """A council run's answer in the phase its briefing names."""
    view = view_of(b.agent, b.asked)
    tag = f"[simulated {b.agent}] council round {b.round} ({b.phase.replace('_', ' ')}):"
    judge = reader(b, view, rng)
    if b.phase == "propose":
        return _propose(b, view, rng, judge, tag)
    if b.phase == "cross_review":
        shown = [h for h in b.heads if h.version_id not in b.own]
        claims = [_claim(b, i, h, judge, rng) for i, h in enumerate(shown)][:50]
        return AgentOutput(summary=_summary(tag, view, claims), claims=claims)
    claims, followed = judge_heads(b, rng, conformity, self_revision, judge)
    new_nodes, forks = explore(b, rng)
    summary = _summary(tag, view, claims) + (
        f" Moved with the previous round on {followed} proposition(s)." if followed else ""
    )
    return AgentOutput(summary=summary, claims=claims, new_nodes=new_nodes, forks=forks)


def reader(b: Briefing, view: View, rng: random.Random) -> Judge:
    """How this agent judges a proposition by reading it."""
    temper = temperament_for(b.agent)
    picked = picks(b, view)

    def judge(head: Head) -> tuple[Stance, float, str]:
        if head.version_id in b.own:
            return "endorse", view.confidence, f"Its own answer: {view.verdict}."
        stated = verdict_in(head.content)
        if stated is None and head.version_id in picked:  # an option: one of a set is this agent's pick
            if picked[head.version_id] == head.version_id:
                return "endorse", view.confidence, "This option is this agent's answer."
            return "dispute", view.confidence, "A rival of the option this agent picks: both cannot hold."
        if stated is None:  # a proposition with no verdict marker: the agent's own draw
            stance = own_stance(b.agent, head.version_id, temper)
            return stance, confidence(temper, rng), READINGS[stance][2]
        if stated == view.verdict:
            return "endorse", view.confidence, f"It answers {stated}, as this agent does, in other words."
        return (
            "dispute",
            view.confidence,
            f"It answers {stated}; this agent's reading of the question is {view.verdict}.",
        )

    return judge


def picks(b: Briefing, view: View) -> dict[str, str]:
    """Each option shown (a head with rivals and no verdict marker) → the option this agent
    picks in its set: the same for the same agent, question and options, in any round."""
    by_id = {h.version_id: h for h in b.heads}
    asked = " ".join(b.asked.split()).lower()
    picked: dict[str, str] = {}
    for head in b.heads:
        if not head.rivals or head.version_id in picked or verdict_in(head.content) is not None:
            continue
        members = sorted(
            {head.version_id, *(r for r in head.rivals if r in by_id)}, key=lambda v: (by_id[v].content, v)
        )
        favoured = int(seeded(f"options:{asked}").random() * len(members))
        pick = members[favoured if view.verdict == "yes" else (favoured + 1) % len(members)]
        picked.update(dict.fromkeys(members, pick))
    return picked


def _propose(b: Briefing, view: View, rng: random.Random, judge: Judge, tag: str) -> AgentOutput:
    if picks(b, view):  # a multiple-choice question: its answer is an option, endorsed, not reworded
        chosen = [_claim(b, i, h, judge, rng) for i, h in enumerate(b.heads)][:50]
        return AgentOutput(summary=_summary(tag, view, chosen), claims=chosen)
    content = wording(b.agent, view.verdict, b.question)
    mine = NewNode(
        ref=f"sim-{slug(b.agent)}-answer",
        content=content,
        status="open",
        cites=cites(b, 0, "endorse", rng, content),
    )
    claims = [_claim(b, i, h, judge, rng) for i, h in enumerate(b.heads)][:50]
    summary = f"{tag} my answer is {view.verdict} ({view.confidence:.2f}): “{mine.content}”"
    if claims:
        summary += " " + _judged(claims)
    return AgentOutput(summary=summary, claims=claims, new_nodes=[mine])


def _claim(b: Briefing, i: int, head: Head, judge: Judge, rng: random.Random) -> ClaimOut:
    stance, sure, rationale = judge(head)
    return ClaimOut(
        node_version_id=head.version_id,
        type=stance,
        confidence=sure,
        rationale=rationale,
        cites=cites(b, i, stance, rng, head.content),
    )


def _summary(tag: str, view: View, claims: list[ClaimOut]) -> str:
    return f"{tag} my answer is {view.verdict} ({view.confidence:.2f}). " + _judged(claims)


def _judged(claims: list[ClaimOut]) -> str:
    counts = {kind: sum(1 for c in claims if c.type == kind) for kind in ("endorse", "dispute", "abstain")}
    return (
        f"Endorsed {counts['endorse']}, disputed {counts['dispute']} and abstained on "
        f"{counts['abstain']} of the {len(claims)} proposition(s) I judged."
    )
