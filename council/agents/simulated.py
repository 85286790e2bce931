"""The simulated provider's behaviour (docs/architecture.md §7): a deterministic stand-in for
a model, so the whole council runs offline through the same code path.

``respond(model, messages)`` reads the briefing — the last fenced ```json block
of a user message — and answers with an ``AgentOutput`` document. The gateway
registers it with litellm as the custom provider ``council-sim``; this module
does not import litellm.

Determinism: the random source is seeded with the SHA-256 of the canonical
request (model and messages), so the same request gives the same answer.

Temperaments, by agent name (any other name gets one chosen by hash):
- claude endorses readily (confidence 0.7–0.9);
- codex is the sceptic: disputes about a third of the heads, endorses the
  rest, confidence mostly 0.3–0.55 and now and then 0.7+;
- glm abstains on some heads, endorses the others, and now and then opens a
  node-level fork or proposes a new node that refines a head;
- balanced: a little of each.
In a deliberative round agents tend to take the previous round's majority
stance on a head (the temperament's ``follow`` share). On an empty thread one
agent per thread proposes 1–2 nodes.

Conformity (profile parameter ``conformity``, a number from -1 to 1, e.g.
``params = {conformity = 0.9}``): how the agent moves on the stances it was
shown. A positive value is the probability of taking the exposed majority
stance on a head (it replaces ``follow``); a negative value the probability of
taking the opposite of that majority (endorse ↔ dispute; an abstaining
majority leaves the agent where it was); 0 ignores exposed stances. With a
conformity stated, an agent's own stance on a head is drawn per agent and
head rather than per request (the temperament's shares become per-head
chances), so it holds across rounds unless what it is shown moves it. Drawn
from seeded sources, so a council with a given conformity moves the same way
each time — tests and the demo use it to produce the classes of
`council stances`.

Self-revision (profile parameter ``self_revision``, a probability, e.g.
``params = {self_revision = 0.3}``): in each round after the first, with that
probability, the agent moves its own stance on a head to another one, whether or
not it was shown anything — drawn from the agent, head and round alone, so a
control run (the same profile on the blind briefing) moves the same way. A run
that self-revises a head is not also moved by conformity there; conformity only
ever moves a run that was shown stances. Absent (or 0), nothing changes.

Review (a briefing with a ``proposal``): exactly one vote on the proposal and
no claims. When some of the consolidation's evidence is invalidated, agents
vote to retract (endorse), except that a sceptic disputes at its dispute share
and, when less than a third of the evidence fell, an agent abstains at its
abstain share; claude and glm thus vote to retract whenever a third or more
fell. With nothing invalidated, agents vote to keep (dispute), or abstain at
their abstain share.

Misbehaviour on request, for tests of the run's validation and re-prompt:
``council-sim/misbehave-<kind>`` with kind ``malformed`` (not JSON),
``unknown-ids`` (a claim on a random UUID), ``schema`` (wrong field types),
``oversize`` (a 30,000-character rationale) or ``once-malformed`` (not JSON
until a user message starts with "Your previous answer was invalid").
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from council.agents.sim_misbehave import misbehave

# The call's settings (latency, conformity) live in sim_params; named here as before.
from council.agents.sim_params import LATENCY_ENV as LATENCY_ENV
from council.agents.sim_params import LATENCY_ENV_FIXED as LATENCY_ENV_FIXED
from council.agents.sim_params import conformity_of as conformity_of
from council.agents.sim_params import latency_s as latency_s
from council.agents.sim_params import latency_spec as latency_spec
from council.agents.sim_params import revised_stance
from council.agents.sim_reads import first_reads, read_id
from council.domain.agent_output import (
    AgentOutput,
    CitationOut,
    ClaimOut,
    EdgeOut,
    ForkOut,
    NewNode,
    VoteOut,
)
from council.domain.canonical import canonical_sha256, sha256_text
from council.domain.reentry import estimate_tokens

PROVIDER = "council-sim"
MODEL_PREFIX = PROVIDER + "/"
MISBEHAVE_PREFIX = "misbehave-"
REPROMPT_PREFIX = "Your previous answer was invalid"
KNOWN_AGENTS = ("claude", "codex", "glm")

Stance = Literal["endorse", "dispute", "abstain"]
Role = Literal["supports", "contradicts", "context"]

_FENCE = re.compile(r"```json[ \t]*\r?\n")
# stance -> (citation role, how the evidence is read, the claim's rationale)
_READINGS: dict[Stance, tuple[Role, str, str]] = {
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


@dataclass(frozen=True)
class SimulatedReply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    # A tool round instead of an answer: the evidence ids to read with read_evidence.
    reads: tuple[str, ...] = ()


@dataclass(frozen=True)
class Temperament:
    dispute_share: float
    abstain_share: float
    confidence: tuple[float, float]
    bold: float  # chance of a confidence of 0.7–0.85 instead
    explore: float  # chance of a node fork or a refining node
    follow: float  # chance of taking the previous round's majority stance


TEMPERAMENTS = {
    "claude": Temperament(0.0, 0.1, (0.7, 0.9), 0.0, 0.0, 0.8),
    "codex": Temperament(1 / 3, 0.0, (0.3, 0.55), 0.15, 0.0, 0.6),
    "glm": Temperament(0.0, 0.3, (0.55, 0.8), 0.0, 0.4, 0.7),
    "balanced": Temperament(0.15, 0.15, (0.5, 0.75), 0.1, 0.1, 0.7),
}


def temperament_for(agent: str) -> Temperament:
    if agent in TEMPERAMENTS:
        return TEMPERAMENTS[agent]
    names = sorted(TEMPERAMENTS)
    return TEMPERAMENTS[names[int(sha256_text(agent), 16) % len(names)]]


@dataclass(frozen=True)
class _Proposal:
    id: str
    evidence: int  # items in the consolidation's evidence index
    invalidated: int  # of those, invalidated now


@dataclass(frozen=True)
class _Head:
    version_id: str
    content: str


@dataclass(frozen=True)
class _Briefing:
    agent: str
    mode: str
    round: int
    title: str
    thread_id: str
    heads: list[_Head]
    evidence: list[str]
    previous: list[Mapping[str, Any]]
    council: list[str]
    proposal: _Proposal | None = None


def respond(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    conformity: float | None = None,
    self_revision: float | None = None,
    tools_offered: bool = False,
) -> SimulatedReply:
    """The simulated answer to one chat request (pure and deterministic; ``conformity``
    and ``self_revision`` as in the module's docstring). Offered the ``read_evidence``
    tool with evidence left out of its briefing, the simulated agent first reads it (up
    to 8 items, one tool round), then answers citing only what it was given or read."""
    texts = [(str(m.get("role")), _text(m.get("content"))) for m in messages]
    unread = first_reads(texts, _fenced_json) if tools_offered else ()
    if unread:
        return SimulatedReply("", sum(estimate_tokens(t) for _, t in texts), 8 * len(unread), unread)
    rng = random.Random(int(canonical_sha256({"model": model, "messages": texts}), 16))  # noqa: S311
    name = model.removeprefix(MODEL_PREFIX)
    briefing = _briefing(texts, default_agent=name)
    kind = name.removeprefix(MISBEHAVE_PREFIX) if name.startswith(MISBEHAVE_PREFIX) else ""
    if kind == "once-malformed":
        repaired = any(role == "user" and text.startswith(REPROMPT_PREFIX) for role, text in texts)
        kind = "" if repaired else "malformed"
    first_head = briefing.heads[0].version_id if briefing.heads else None
    text = misbehave(kind, briefing.agent, first_head, rng) if kind else None
    if text is None:  # an unknown kind behaves (as without conformity or self-revision)
        settings = (conformity, self_revision) if not kind else (None, None)
        text = _answer(briefing, rng, *settings).model_dump_json(exclude_none=True)
    prompt_tokens = sum(estimate_tokens(t) for _, t in texts)
    return SimulatedReply(text, prompt_tokens, estimate_tokens(text))


# ------------------------------------------------------------------ briefing


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI-style content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return "" if content is None else str(content)


def _fenced_json(text: str) -> dict[str, Any] | None:
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


def _briefing(texts: Sequence[tuple[str, str]], *, default_agent: str) -> _Briefing:
    raw: dict[str, Any] = {}
    for role, text in reversed(texts):
        found = _fenced_json(text) if role == "user" else None
        if found is not None:
            raw = found
            break
    packet = _mapping(raw.get("packet"))
    thread = _mapping(raw.get("thread"))
    heads = [
        _Head(str(h["version_id"]), str(h.get("content", "")))
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
    return _Briefing(
        agent=str(raw.get("agent") or default_agent),
        mode=str(raw.get("mode") or "independent"),
        round=int(raw["round"]) if isinstance(raw.get("round"), int) else 1,
        title=str(thread.get("title") or packet.get("title") or ""),
        thread_id=str(thread.get("id") or packet.get("thread_id") or ""),
        heads=heads,
        evidence=evidence,
        previous=[p for p in _list(raw.get("previous_round")) if isinstance(p, Mapping)],
        council=[str(a) for a in _list(raw.get("council"))],
        proposal=_proposal(_mapping(raw.get("proposal"))),
    )


def _proposal(raw: Mapping[str, Any]) -> _Proposal | None:
    if not raw.get("id"):
        return None
    evidence = [e for e in _list(raw.get("evidence")) if isinstance(e, Mapping)]
    fallen = sum(1 for e in evidence if e.get("validity") == "invalidated")
    return _Proposal(str(raw["id"]), len(evidence), fallen)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


# ------------------------------------------------------------------- answers


_OPPOSITE: dict[Stance, Stance] = {"endorse": "dispute", "dispute": "endorse", "abstain": "abstain"}


def _own_stance(agent: str, version_id: str, temper: Temperament) -> Stance:
    """Under a stated conformity, an agent's own stance on a head is drawn per agent and
    head, not per request: it keeps it round after round unless the stances it is shown
    move it, so each change `council stances` sees is the conformity's."""
    draw = random.Random(int(sha256_text(f"{agent}:{version_id}"), 16)).random()  # noqa: S311
    if draw < temper.dispute_share:
        return "dispute"
    return "abstain" if draw < temper.dispute_share + temper.abstain_share else "endorse"


def _answer(
    b: _Briefing, rng: random.Random, conformity: float | None = None, self_revision: float | None = None
) -> AgentOutput:
    if b.mode == "review" and b.proposal is not None:
        return _review(b.agent, b.proposal, rng)
    tag = f"[simulated {b.agent}] {b.mode} round {b.round}:"
    if not b.heads:
        return _open_thread(b, rng, tag)
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
            stance = _own_stance(b.agent, head.version_id, temper)
        confidence = _confidence(temper, rng)
        rationale = _READINGS[stance][2]
        majority = _majority(b.previous, head.version_id)
        follow = temper.follow if conformity is None else abs(conformity)
        revised = stance
        if self_revision:  # drawn from agent, head and round alone: its control revises alike
            revised = revised_stance(b.agent, head.version_id, b.round, stance, self_revision)
        if revised != stance:
            stance, rationale = revised, f"Revises its own reading of this head in round {b.round}."
        elif majority is not None and rng.random() < follow:
            shown, confidence, votes, total = majority
            confidence = min(1.0, max(0.0, round(confidence + rng.uniform(-0.05, 0.05), 2)))
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
                confidence=confidence,
                rationale=rationale,
                cites=_cites(b, i, stance, rng, head.version_id),
            )
        )
    new_nodes: list[NewNode] = []
    forks: list[ForkOut] = []
    if rng.random() < temper.explore:
        i = rng.randrange(n)
        head = b.heads[i]
        if rng.random() < 0.5:
            label = f"{b.agent}: another reading of the evidence at head {head.version_id[:8]}"
            forks.append(ForkOut(kind="node", label=label, divergence_type="evidence_interpretation",
                                 at_version_id=head.version_id))  # fmt: skip
        else:
            new_nodes.append(
                NewNode(
                    ref=f"sim-{_slug(b.agent)}-refine",
                    content=f"Refinement: {head.content[:400]} (only where the cited evidence applies)",
                    status="tentative",
                    edges=[EdgeOut(kind="refines", to=head.version_id)],
                    cites=_cites(b, i, "endorse", rng),
                )
            )
    counts = Counter(c.type for c in claims)
    summary = (
        f"{tag} endorsed {counts['endorse']}, disputed {counts['dispute']} and abstained on "
        f"{counts['abstain']} of {n} heads"
        + (f"; followed the previous round on {followed}" if followed else "")
        + (f"; proposed {len(new_nodes)} refining node" if new_nodes else "")
        + ("; opened a node fork" if forks else "")
        + "."
    )
    # The contract allows at most 50 claims; a large frontier must not make the stand-in invalid.
    return AgentOutput(summary=summary, claims=claims[:50], new_nodes=new_nodes, forks=forks)


def _review(agent: str, proposal: _Proposal, rng: random.Random) -> AgentOutput:
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
        proposal_id=proposal.id, vote=stance, confidence=_confidence(temper, rng), rationale=rationale
    )
    summary = (
        f"[simulated {agent}] review: voted {stance} ({meaning}) on retraction proposal "
        f"{proposal.id[:8]}; {fallen} of {total} evidence items invalidated."
    )
    return AgentOutput(summary=summary, votes=[vote])


def _open_thread(b: _Briefing, rng: random.Random, tag: str) -> AgentOutput:
    # One proposer per thread, chosen by hash among the council (or the default agents).
    council = set(b.council or KNOWN_AGENTS) | {b.agent}
    proposer = min(council, key=lambda a: sha256_text(f"{b.thread_id}:{a}"))
    if proposer != b.agent:
        return AgentOutput(summary=f"{tag} the thread has no heads yet; nothing to claim on.")
    refs = [f"sim-{_slug(b.agent)}-{j}" for j in range(1, 2 + (rng.random() < 0.5))]
    nodes = [
        NewNode(
            ref=ref,
            content=f"Working proposition {j} for '{b.title[:200]}' (simulated, by {b.agent}).",
            status="open",
            edges=[EdgeOut(kind="depends_on", to=f"ref:{refs[0]}")] if j > 1 else [],
            cites=_cites(b, j - 1, "endorse", rng),
        )
        for j, ref in enumerate(refs, start=1)
    ]
    return AgentOutput(
        summary=f"{tag} the thread has no heads yet; proposed {len(nodes)} new node(s).", new_nodes=nodes
    )


def _confidence(temper: Temperament, rng: random.Random) -> float:
    low, high = (0.7, 0.85) if rng.random() < temper.bold else temper.confidence
    return round(rng.uniform(low, high), 2)


def _majority(
    previous: Sequence[Mapping[str, Any]], version_id: str
) -> tuple[Stance, float, int, int] | None:
    """(stance, mean confidence, votes, total) of a strict majority of the previous round on a head."""
    stances: list[tuple[Stance, float]] = []
    for p in previous:
        if str(p.get("node_version_id")) != version_id:
            continue
        stance = "endorse" if p.get("type") == "originate" else str(p.get("type"))
        if stance in _READINGS:
            stances.append((stance, _float(p.get("confidence"))))
    if not stances:
        return None
    top, votes = Counter(s for s, _ in stances).most_common(1)[0]
    if votes * 2 <= len(stances):
        return None
    mean = sum(c for s, c in stances if s == top) / votes
    return top, mean, votes, len(stances)


def _float(value: Any) -> float:
    try:
        return min(1.0, max(0.0, float(value)))
    except (TypeError, ValueError):
        return 0.5


def _cites(
    b: _Briefing, i: int, stance: Stance, rng: random.Random, head: str | None = None
) -> list[CitationOut]:
    """1–2 evidence ids from this agent's own slice of the list, so agents seldom share two."""
    m = len(b.evidence)
    if not m:
        return []
    if b.agent in KNOWN_AGENTS:
        offset = KNOWN_AGENTS.index(b.agent) * m // len(KNOWN_AGENTS)
    else:
        offset = int(sha256_text(b.agent), 16) % m
    picks = [b.evidence[(offset + i) % m]]
    # Whether to cite a second item is drawn per agent and head, not per request: an agent
    # cites the same evidence on a head round after round until the evidence list changes,
    # so `council stances` sees new citations only where new evidence arrived.
    # (The request's own draw is still taken, so the rest of the answer is drawn as before.)
    second = rng.random() if m > 1 else 1.0
    if head is not None and m > 1:
        second = random.Random(int(sha256_text(f"{b.agent}:{head}"), 16)).random()  # noqa: S311
    if second < 0.4:
        picks.append(b.evidence[(offset + i + 1) % m])
    role, reading, _ = _READINGS[stance]
    return [CitationOut(evidence_id=e, role=role, interpretation=reading) for e in picks]


def _slug(agent: str) -> str:
    return re.sub(r"[^a-z0-9_-]", "-", agent.lower())[:24] or "agent"
