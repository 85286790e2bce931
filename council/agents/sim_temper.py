"""Who a simulated agent is (``council.agents.simulated``): its temperament, the view it holds
on a question, how it words a proposition, and how it reads one.

Temperaments, by agent name (any other name gets one chosen by hash):
- claude endorses readily (confidence 0.7–0.9) and seldom holds the contrary view;
- codex is the sceptic: disputes about a third of heads it cannot read, confidence mostly
  0.3–0.55 and now and then 0.7+, and holds the contrary view more often;
- glm abstains on some heads, and now and then opens a node-level fork or proposes a node
  that refines a head;
- balanced: a little of each.

A view is a verdict (yes or no) on what the thread asks, with a confidence, drawn from the
question and the agent alone: every agent starts from the answer the question's own draw
favours and takes the other one at its temperament's ``contrary`` share, less surely (its
confidence times :data:`CONTRARY_CONFIDENCE`). So agents mostly agree, not always, and never
by script. Each words its proposition its own way (one of
:data:`WORDINGS`, chosen by name), and reads another's by its verdict marker; a proposition
that carries none (written by a person) it judges by a draw of its own, per agent and version.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Literal

from council.domain.canonical import sha256_text

Stance = Literal["endorse", "dispute", "abstain"]
Verdict = Literal["yes", "no"]
KNOWN_AGENTS = ("claude", "codex", "glm")


@dataclass(frozen=True)
class Temperament:
    dispute_share: float
    abstain_share: float
    confidence: tuple[float, float]
    bold: float  # chance of a confidence of 0.7–0.85 instead
    explore: float  # chance of a node fork or a refining node
    follow: float  # chance of taking the previous round's majority stance
    contrary: float = 0.15  # chance of holding the view the question's own draw does not favour


TEMPERAMENTS = {
    "claude": Temperament(0.0, 0.1, (0.7, 0.9), 0.0, 0.0, 0.8, 0.1),
    "codex": Temperament(1 / 3, 0.0, (0.3, 0.55), 0.15, 0.0, 0.6, 0.3),
    "glm": Temperament(0.0, 0.3, (0.55, 0.8), 0.0, 0.4, 0.7, 0.15),
    "balanced": Temperament(0.15, 0.15, (0.5, 0.75), 0.1, 0.1, 0.7, 0.2),
}


def temperament_for(agent: str) -> Temperament:
    if agent in TEMPERAMENTS:
        return TEMPERAMENTS[agent]
    names = sorted(TEMPERAMENTS)
    return TEMPERAMENTS[names[int(sha256_text(agent), 16) % len(names)]]


def confidence(temper: Temperament, rng: random.Random) -> float:
    low, high = (0.7, 0.85) if rng.random() < temper.bold else temper.confidence
    return round(rng.uniform(low, high), 2)


def seeded(key: str) -> random.Random:
    """A random source drawn from ``key`` alone (the same key, the same draws)."""
    return random.Random(int(sha256_text(key), 16))  # noqa: S311


def own_stance(agent: str, version_id: str, temper: Temperament) -> Stance:
    """An agent's own stance on a head it cannot read a verdict in, drawn per agent and head
    (not per request): it keeps it round after round unless what it is shown moves it."""
    draw = seeded(f"{agent}:{version_id}").random()
    if draw < temper.dispute_share:
        return "dispute"
    return "abstain" if draw < temper.dispute_share + temper.abstain_share else "endorse"


# An agent holding the view the question's own draw does not favour is less sure of it.
CONTRARY_CONFIDENCE = 0.8


@dataclass(frozen=True)
class View:
    verdict: Verdict
    confidence: float


def view_of(agent: str, asked: str) -> View:
    """The verdict ``agent`` holds on what the thread asks (``asked``: its objective and
    questions), and how sure it is: the same for the same agent and question, in any round."""
    temper = temperament_for(agent)
    asked = " ".join(asked.split()).lower()
    favoured: Verdict = "yes" if seeded(f"question:{asked}").random() < 0.5 else "no"
    draws = seeded(f"view:{agent}:{asked}")
    contrary = draws.random() < temper.contrary
    verdict: Verdict = ("no" if favoured == "yes" else "yes") if contrary else favoured
    sure = confidence(temper, draws)
    return View(verdict, round(sure * CONTRARY_CONFIDENCE, 2) if contrary else sure)


# How each agent words its own proposition: (yes, no), one pair per agent (by name).
WORDINGS: tuple[tuple[str, str], ...] = (
    (
        "Yes. Asked “{q}”, the evidence in the briefing bears it out, as far as that evidence goes.",
        "No. Asked “{q}”, the evidence in the briefing does not bear it out.",
    ),
    (
        "Affirmative on “{q}”: what the briefing shows is enough to say so, though more could overturn it.",
        "Negative on “{q}”: what the briefing shows falls short, and the gaps matter.",
    ),
    (
        "The answer is yes: nothing in the material given cuts against “{q}”.",
        "The answer is no: the material given cuts against “{q}”.",
    ),
    (
        "On balance, yes — “{q}” holds on what is known so far.",
        "On balance, no — “{q}” does not hold on what is known so far.",
    ),
)
MAX_QUOTED = 300


def wording(agent: str, verdict: Verdict, question: str) -> str:
    """The proposition ``agent`` writes for its verdict on ``question``, in its own words."""
    index = KNOWN_AGENTS.index(agent) if agent in KNOWN_AGENTS else int(sha256_text(agent), 16)
    quoted = " ".join(question.split()).replace("“", '"').replace("”", '"')
    if len(quoted) > MAX_QUOTED:
        quoted = quoted[: MAX_QUOTED - 1] + "…"
    yes, no = WORDINGS[index % len(WORDINGS)]
    return (yes if verdict == "yes" else no).format(q=quoted)


_QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"")
_MARKER = re.compile(r"\b(yes|affirmative|no|negative)\b")


def verdict_in(content: str) -> Verdict | None:
    """The verdict a proposition states, read from its first verdict marker outside quotes
    (None: it carries none, as a person's proposition usually does not)."""
    found = _MARKER.search(_QUOTED.sub(" ", content).lower())
    if found is None:
        return None
    return "yes" if found.group(1) in ("yes", "affirmative") else "no"
