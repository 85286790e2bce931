"""How a simulated agent judges the heads it is shown (``council.agents.simulated``): a claim
on each, moved by the previous round's stances (its temperament's ``follow`` share, or a
stated ``conformity``) and by ``self_revision``; now and then a node fork or a refining
node; a vote in a review; and on an empty thread, one proposer per thread.

Where a head's stance comes from is the caller's: a :data:`Judge` (a council agent reads
each proposition: ``council.agents.sim_council``), or else the temperament's shares drawn
per request (or per agent and head under a stated conformity), as independent and
deliberative dispatches always have.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from council.agents.sim_briefing import Briefing, Head, Proposal
from council.agents.sim_params import revised_stance
from council.agents.sim_temper import (
    KNOWN_AGENTS,
    Stance,
    confidence,
    own_stance,
    seeded,
    temperament_for,
)
from council.domain.agent_output import AgentOutput, CitationOut, ClaimOut, EdgeOut, ForkOut, NewNode, VoteOut
from council.domain.canonical import sha256_text

Role = Literal["supports", "contradicts", "context"]
# A head's stance, confidence and rationale, as the caller judges it (None: the temperament's).
Judge = Callable[[Head], tuple[Stance, float, str]]

# stance -> (citation role, how the evidence is read, the claim's rationale)
READINGS: dict[Stance, tuple[Role, str, str]] = {
    "endorse": (
        "supports",
        "read as consistent with this head",
        "The head fits the cited evidence as far as that evidence goes.",
    ),
    "dispute": (
        "contradicts",
        "read as leaving room for counterexamples to this head",
        "The head claims more than the cited evidence shows; counterexamples remain open.",
    ),
    "abstain": (
        "context",
        "read as background; it does not decide this head either way",
        "The briefing holds too little to take a side on this head.",
    ),
}
_OPPOSITE: dict[Stance, Stance] = {"endorse": "dispute", "dispute": "endorse", "abstain": "abstain"}


def judge_heads(
    b: Briefing,
    rng: random.Random,
    conformity: float | None = None,
    self_revision: float | None = None,
    judge: Judge | None = None,
) -> tuple[list[ClaimOut], int]:
    """A claim on each head (at most 50, the contract's bound), and how many followed the
    previous round."""
    temper = temperament_for(b.agent)
    n = len(b.heads)
    order = rng.sample(range(n), n)
    disputed = set(order[: round(n * temper.dispute_share)])
    abstained = set(order[len(disputed) : len(disputed) + round(n * temper.abstain_share)])
    claims = []
    followed = 0
    for i, head in enumerate(b.heads):
        stance: Stance = "dispute" if i in disputed else "abstain" if i in abstained else "endorse"
        if conformity is not None or self_revision:
            stance = own_stance(b.agent, head.version_id, temper)
        confidence_now = confidence(temper, rng)
        rationale = READINGS[stance][2]
        if judge is not None:
            stance, confidence_now, rationale = judge(head)
        majority = _majority(b.previous, head.version_id)
        follow = temper.follow if conformity is None else abs(conformity)
        revised = stance
        if self_revision:  # drawn from agent, head and round alone: its control revises alike
            revised = revised_stance(b.agent, head.version_id, b.round, stance, self_revision)
        if revised != stance:
            stance, rationale = revised, f"Revises its own reading of this head in round {b.round}."
        elif majority is not None and rng.random() < follow:
            shown, confidence_now, votes, total = majority
            confidence_now = min(1.0, max(0.0, round(confidence_now + rng.uniform(-0.05, 0.05), 2)))
            if conformity is not None and conformity < 0:
                stance = _OPPOSITE[shown] if shown != "abstain" else stance
                rationale = (
                    f"Moves against round {b.round - 1}: {votes} of {total} claims there were {shown}."
                )
            else:
                stance = shown
                rationale = f"Moves with round {b.round - 1}: {votes} of {total} claims there were {stance}."
            followed += 1
        claims.append(
            ClaimOut(
                node_version_id=head.version_id,
                type=stance,
                confidence=confidence_now,
                rationale=rationale,
                cites=cites(b, i, stance, rng, head.content),
            )
        )
    return claims[:50], followed


def explore(b: Briefing, rng: random.Random) -> tuple[list[NewNode], list[ForkOut]]:
    """Now and then (the temperament's ``explore`` share) a node fork or a refining node."""
    new_nodes: list[NewNode] = []
    forks: list[ForkOut] = []
    if b.heads and rng.random() < temperament_for(b.agent).explore:
        i = rng.randrange(len(b.heads))
        head = b.heads[i]
        if rng.random() < 0.5:
            label = f"{b.agent}: another reading of the evidence at head {head.version_id[:8]}"
            forks.append(ForkOut(kind="node", label=label, divergence_type="evidence_interpretation",
                                 at_version_id=head.version_id))  # fmt: skip
        else:
            content = f"Refinement: {head.content[:400]} (only where the cited evidence applies)"
            new_nodes.append(
                NewNode(
                    ref=f"sim-{slug(b.agent)}-refine",
                    content=content,
                    status="tentative",
                    edges=[EdgeOut(kind="refines", to=head.version_id)],
                    cites=cites(b, i, "endorse", rng, content),
                )
            )
    return new_nodes, forks


def judged(
    b: Briefing, rng: random.Random, conformity: float | None = None, self_revision: float | None = None
) -> AgentOutput:
    """An independent or deliberative run's answer: a claim on each head, by its temperament."""
    if b.mode == "review" and b.proposal is not None:
        return review(b.agent, b.proposal, rng)
    tag = f"[simulated {b.agent}] {b.mode} round {b.round}:"
    if not b.heads:
        return open_thread(b, rng, tag)
    claims, followed = judge_heads(b, rng, conformity, self_revision)
    new_nodes, forks = explore(b, rng)
    counts = Counter(c.type for c in claims)
    summary = (
        f"{tag} endorsed {counts['endorse']}, disputed {counts['dispute']} and abstained on "
        f"{counts['abstain']} of {len(b.heads)} heads"
        + (f"; followed the previous round on {followed}" if followed else "")
        + (f"; proposed {len(new_nodes)} refining node" if new_nodes else "")
        + ("; opened a node fork" if forks else "")
        + "."
    )
    return AgentOutput(summary=summary, claims=claims, new_nodes=new_nodes, forks=forks)


def review(agent: str, proposal: Proposal, rng: random.Random) -> AgentOutput:
    """One vote on the proposal: endorse = retract, dispute = keep."""
    temper = temperament_for(agent)
    fallen, total = proposal.invalidated, proposal.evidence
    stance: Stance
    if fallen:
        few = fallen * 3 < total
        if rng.random() < temper.dispute_share:
            stance, rationale = "dispute", "What remains of the evidence still carries the node; keep it."
        elif few and rng.random() < temper.abstain_share:
            stance, rationale = "abstain", "Too little of the evidence fell to take a side on retracting it."
        else:
            stance = "endorse"
            rationale = f"{fallen} of {total} evidence items it rests on are invalidated; retract it."
    elif rng.random() < temper.abstain_share:
        stance, rationale = "abstain", "The briefing holds too little to take a side on this retraction."
    else:
        stance, rationale = "dispute", "None of the evidence it rests on is invalidated; keep it."
    meaning = {"endorse": "retract", "dispute": "keep", "abstain": "no side"}[stance]
    vote = VoteOut(
        proposal_id=proposal.id, vote=stance, confidence=confidence(temper, rng), rationale=rationale
    )
    summary = (
        f"[simulated {agent}] review: voted {stance} ({meaning}) on retraction proposal "
        f"{proposal.id[:8]}; {fallen} of {total} evidence items invalidated."
    )
    return AgentOutput(summary=summary, votes=[vote])


def open_thread(b: Briefing, rng: random.Random, tag: str) -> AgentOutput:
    # One proposer per thread, chosen by hash among the council (or the default agents).
    council = set(b.council or KNOWN_AGENTS) | {b.agent}
    proposer = min(council, key=lambda a: sha256_text(f"{b.thread_id}:{a}"))
    if proposer != b.agent:
        return AgentOutput(summary=f"{tag} the thread has no heads yet; nothing to claim on.")
    refs = [f"sim-{slug(b.agent)}-{j}" for j in range(1, 2 + (rng.random() < 0.5))]
    worded = [
        f"Working proposition {j} for '{b.title[:200]}' (simulated, by {b.agent})."
        for j in range(1, len(refs) + 1)
    ]
    nodes = [
        NewNode(
            ref=ref,
            content=content,
            status="open",
            edges=[EdgeOut(kind="depends_on", to=f"ref:{refs[0]}")] if j > 1 else [],
            cites=cites(b, j - 1, "endorse", rng, content),
        )
        for j, (ref, content) in enumerate(zip(refs, worded, strict=True), start=1)
    ]
    return AgentOutput(
        summary=f"{tag} the thread has no heads yet; proposed {len(nodes)} new node(s).", new_nodes=nodes
    )


def _majority(
    previous: Sequence[Mapping[str, object]], version_id: str
) -> tuple[Stance, float, int, int] | None:
    """(stance, mean confidence, votes, total) of a strict majority of the previous round on a head."""
    stances: list[tuple[Stance, float]] = []
    for p in previous:
        if str(p.get("node_version_id")) != version_id:
            continue
        stance = "endorse" if p.get("type") == "originate" else str(p.get("type"))
        if stance in READINGS:
            stances.append((stance, _float(p.get("confidence"))))
    if not stances:
        return None
    top, votes = Counter(s for s, _ in stances).most_common(1)[0]
    if votes * 2 <= len(stances):
        return None
    mean = sum(c for s, c in stances if s == top) / votes
    return top, mean, votes, len(stances)


def _float(value: object) -> float:
    try:
        return min(1.0, max(0.0, float(str(value))))
    except (TypeError, ValueError):
        return 0.5


def cites(
    b: Briefing, i: int, stance: Stance, rng: random.Random, head: str | None = None
) -> list[CitationOut]:
    """1–2 evidence ids from this agent's own slice of the list, so agents seldom share two.
    ``head``: the proposition's content, which places the picks — the same whether the agent
    originates the proposition or claims on it later, so a stance it keeps or changes on its
    own proposition cites what its origination cited (no evidence change is recorded where
    none happened)."""
    m = len(b.evidence)
    if not m:
        return []
    if b.agent in KNOWN_AGENTS:
        offset = KNOWN_AGENTS.index(b.agent) * m // len(KNOWN_AGENTS)
    else:
        offset = int(sha256_text(b.agent), 16) % m
    if head is not None:  # its own place, not its index: a head inserted before it moves no citation
        i = int(sha256_text(head), 16) % m
    picks = [b.evidence[(offset + i) % m]]
    # Whether to cite a second item is drawn per agent and head, not per request: an agent
    # cites the same evidence on a head round after round until the evidence list changes,
    # so `council stances` sees new citations only where new evidence arrived.
    # (The request's own draw is still taken, so the rest of the answer is drawn as before.)
    second = rng.random() if m > 1 else 1.0
    if head is not None and m > 1:
        second = seeded(f"{b.agent}:{head}").random()
    if second < 0.4:
        picks.append(b.evidence[(offset + i + 1) % m])
    role, reading, _ = READINGS[stance]
    return [CitationOut(evidence_id=e, role=role, interpretation=reading) for e in picks]


def slug(agent: str) -> str:
    return re.sub(r"[^a-z0-9_-]", "-", agent.lower())[:24] or "agent"
