"""A fake model that thinks for itself, as a real one does (issue 43): it holds a verdict on
the question with a confidence, words its own proposition in its own style (never another
model's text), and judges what it is shown by reading it. Served over the OpenAI chat and
Anthropic Messages APIs by ``chat_model(mind=...)`` and ``messages_model(mind=...)``
(``tests.fakes.chat_model``).

It shares nothing with Council's simulated provider: its own briefing parser, its own
wording and its own reading (a small lexicon of verdict words outside quotes), so a council
of these models converges only when their verdicts do, and only through what Council shows
them:

- proposing (``phase`` propose): one new proposition stating its verdict on the question in
  its style, citing the evidence it was given (or read), and a claim on each head already
  there, by reading it;
- cross-review and deliberation: a claim on each proposition it is shown (the cross-review:
  every one not among ``your_propositions``): endorse what states its verdict, dispute what
  states the other, abstain where it cannot tell — at its own confidence; it never moves;
- offered ``read_evidence`` with evidence left out of its briefing, it reads that first;
- a multiple-choice question (heads with rivals whose content is ``LABEL: TEXT``, as
  Council words options): it picks one option (``Mind.option``, else the first label for
  yes and the second for no), endorses it and disputes its rivals in every phase, and
  proposes nothing of its own;
- its own proposition carries its confidence (the originate claim's).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

Verdict = Literal["yes", "no"]

# How each style puts a verdict: (yes, no); {q} is the question, {ev} the evidence it read.
STYLES: tuple[tuple[str, str], ...] = (
    (
        "Yes. Having read “{ev}”, my answer to “{q}” is that it does.",
        "No. Having read “{ev}”, my answer to “{q}” is that it does not.",
    ),
    (
        "I hold that it does: “{q}” gets an affirmative from me, on “{ev}”.",
        "I hold that it does not: “{q}” gets a negative from me, on “{ev}”.",
    ),
    (
        "Affirmative — “{ev}” carries it, so to “{q}” I say yes.",
        "Negative — “{ev}” is not enough, so to “{q}” I say no.",
    ),
)
REPROMPT = "Your previous answer was invalid"  # how Council's one re-prompt begins
_QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"")
_AGAINST = re.compile(r"\b(no|not|negative)\b")
_FOR = re.compile(r"\b(yes|affirmative|does)\b")


@dataclass(frozen=True)
class Mind:
    """What a fake model holds: its verdict on any question, how sure it is, and its style.
    ``skips``: a careless reviewer judges only the first proposition it is shown in a
    cross-review — ``once`` (it repairs when re-prompted) or ``always``."""

    verdict: Verdict
    confidence: float
    style: int
    skips: Literal["never", "once", "always"] = "never"
    option: str | None = None  # the label it picks on a multiple-choice question


def read_verdict(text: str) -> Verdict | None:
    """The verdict a proposition states, as this model reads it (outside quotes)."""
    plain = _QUOTED.sub(" ", text).lower()
    if _AGAINST.search(plain):
        return "no"
    return "yes" if _FOR.search(plain) else None


def briefing_in(messages: list[Any]) -> dict[str, Any]:
    """The briefing of the last user message holding one (its ```json block)."""
    for message in reversed(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") == "user" and isinstance(content, str) and "```json\n" in content:
            try:
                found = json.loads(content.split("```json\n", 1)[1].split("\n```", 1)[0])
            except ValueError:
                continue
            if isinstance(found, dict):
                return found
    return {}


def unread(messages: list[Any], tools_offered: bool) -> list[str]:
    """The evidence to read before answering: what the briefing left out, when offered the
    tool and nothing was read yet."""
    if not tools_offered or any(isinstance(m, dict) and m.get("role") == "tool" for m in messages):
        return []
    return [str(e) for e in briefing_in(messages).get("evidence_not_given") or []][:8]


def answer(mind: Mind, model: str, messages: list[Any]) -> str:
    """The model's answer to a Council request, as one JSON document."""
    briefing = briefing_in(messages)
    read = _evidence_read(briefing, messages)
    cites = (
        [{"evidence_id": read[0][0], "role": "supports", "interpretation": f"{model} relied on it."}]
        if read
        else []
    )
    if isinstance(briefing.get("proposal"), dict):
        proposal = briefing["proposal"]["id"]
        vote = {
            "proposal_id": proposal,
            "vote": "dispute",
            "confidence": mind.confidence,
            "rationale": "Keep it.",
        }
        return json.dumps({"summary": f"{model}: keep it.", "votes": [vote]})
    own = set(briefing.get("your_propositions") or [])
    heads = [h for h in (briefing.get("packet") or {}).get("heads") or [] if h.get("version_id") not in own]
    reprompted = any(
        isinstance(m, dict) and m.get("role") == "user" and str(m.get("content")).startswith(REPROMPT)
        for m in messages
    )
    if briefing.get("phase") == "cross_review" and (
        mind.skips == "always" or (mind.skips == "once" and not reprompted)
    ):
        heads = heads[:1]
    picked = _pick(mind, (briefing.get("packet") or {}).get("heads") or [])
    claims = [_judged(mind, model, head, cites, picked) for head in heads]
    output: dict[str, Any] = {"claims": [c for c in claims if c is not None][:50]}
    thread = briefing.get("thread") or {}
    question = ([*(thread.get("questions") or [])] or [thread.get("objective") or "the question"])[-1]
    summary = f"{model}: my answer is {mind.verdict}, at {mind.confidence:.2f}"
    if briefing.get("phase") == "propose" and picked is None:
        wording = STYLES[mind.style % len(STYLES)][0 if mind.verdict == "yes" else 1]
        titled = read[0][1] if read else "what the briefing holds"
        content = wording.format(q=" ".join(str(question).split()), ev=titled)
        mine = {
            "ref": "mine",
            "content": content,
            "status": "open",
            "confidence": mind.confidence,
            "cites": cites,
        }
        output["new_nodes"] = [mine]
        summary += f"; I propose: {content}"
    judged = output["claims"]
    agreed = sum(1 for c in judged if c["type"] == "endorse")
    output["summary"] = summary + f". Endorsed {agreed} and disputed {len(judged) - agreed} of what I read."
    return json.dumps(output)


def _label(head: dict[str, Any]) -> str | None:
    """An option's label (``LABEL: TEXT`` of a head with rivals); None for any other head."""
    content = str(head.get("content") or "")
    return content.split(":", 1)[0].strip() if head.get("rivals") and ":" in content else None


def _pick(mind: Mind, heads: list[dict[str, Any]]) -> str | None:
    """The option this model picks (None: the question is not multiple-choice)."""
    labels = sorted({label for h in heads if (label := _label(h)) is not None})
    if not labels:
        return None
    if mind.option is not None:
        return mind.option
    return labels[0] if mind.verdict == "yes" or len(labels) == 1 else labels[1]


def _judged(
    mind: Mind, model: str, head: dict[str, Any], cites: list[dict[str, str]], picked: str | None = None
) -> dict[str, Any] | None:
    stated = read_verdict(str(head.get("content") or ""))
    label = _label(head)
    if picked is not None and label is not None:
        stance = "endorse" if label == picked else "dispute"
        why = f"{model} picks option {picked}; the options are mutually exclusive."
    elif stated is None:
        stance, why = "abstain", f"{model} cannot tell which answer this states."
    elif stated == mind.verdict:
        stance, why = "endorse", f"{model} reads it as answering {stated}, as it does."
    else:
        stance, why = "dispute", f"{model} reads it as answering {stated}; it holds {mind.verdict}."
    return {
        "node_version_id": head["version_id"],
        "type": stance,
        "confidence": mind.confidence,
        "rationale": why,
        "cites": [{**c, "role": "supports" if stance == "endorse" else "context"} for c in cites],
    }


def _evidence_read(briefing: dict[str, Any], messages: list[Any]) -> list[tuple[str, str]]:
    """(id, title) of the evidence the model read: given inline, or returned by read_evidence."""
    titles = {
        str(e.get("id")): str(e.get("title")) for e in (briefing.get("packet") or {}).get("evidence") or []
    }
    found = [(str(e["id"]), str(e.get("title") or "")) for e in briefing.get("evidence_texts") or []]
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "tool":
            try:
                document = json.loads(str(message.get("content")))
            except ValueError:
                continue
            if isinstance(document, dict) and document.get("evidence_id"):
                read = str(document["evidence_id"])
                found.append((read, titles.get(read, read)))
    return found
