"""The simulated provider's behaviour (docs/architecture.md §7): a deterministic stand-in for
a model, so the whole council runs offline through the same code path.

``respond(model, messages)`` reads the briefing — the last fenced ```json block
of a user message (``sim_briefing``) — and answers with an ``AgentOutput`` document. The
gateway registers it with litellm as the custom provider ``council-sim``; this module
does not import litellm.

Determinism: the random source is seeded with the SHA-256 of the canonical
request (model and messages), so the same request gives the same answer.

Who an agent is — its temperament, the view it holds on a question, its wording, how it
reads a proposition — is ``sim_temper``. In a council (``dispatch --mode council``,
``council ask``) it thinks for itself (``sim_council``): it proposes its own answer in its
own words, judges in the cross-review what it is shown by reading it, and deliberates.
In an independent or deliberative dispatch it judges each head by its temperament's shares
(``sim_judge``): in a deliberative round agents tend to take the previous round's majority
stance on a head (the temperament's ``follow`` share); on an empty thread one agent per
thread proposes 1–2 nodes.

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

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from council.agents.sim_briefing import fenced_json, read_briefing, text_of
from council.agents.sim_council import council_answer
from council.agents.sim_judge import judged
from council.agents.sim_misbehave import misbehave

# The call's settings (latency, conformity) live in sim_params; named here as before.
from council.agents.sim_params import LATENCY_ENV as LATENCY_ENV
from council.agents.sim_params import LATENCY_ENV_FIXED as LATENCY_ENV_FIXED
from council.agents.sim_params import conformity_of as conformity_of
from council.agents.sim_params import latency_s as latency_s
from council.agents.sim_params import latency_spec as latency_spec
from council.agents.sim_reads import first_reads
from council.agents.sim_temper import KNOWN_AGENTS as KNOWN_AGENTS
from council.agents.sim_temper import TEMPERAMENTS as TEMPERAMENTS
from council.agents.sim_temper import temperament_for as temperament_for
from council.domain.agent_output import AgentOutput
from council.domain.canonical import canonical_sha256
from council.domain.reentry import estimate_tokens

PROVIDER = "council-sim"
MODEL_PREFIX = PROVIDER + "/"
MISBEHAVE_PREFIX = "misbehave-"
REPROMPT_PREFIX = "Your previous answer was invalid"

_fenced_json = fenced_json  # the name the test fakes read briefings with


@dataclass(frozen=True)
class SimulatedReply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    # A tool round instead of an answer: the evidence ids to read with read_evidence.
    reads: tuple[str, ...] = ()


def respond(
    model: str,
    messages: Sequence[Mapping[str, object]],
    *,
    conformity: float | None = None,
    self_revision: float | None = None,
    tools_offered: bool = False,
) -> SimulatedReply:
    """The simulated answer to one chat request (pure and deterministic; ``conformity``
    and ``self_revision`` as in the module's docstring). Offered the ``read_evidence``
    tool with evidence left out of its briefing, the simulated agent first reads it (up
    to 8 items, one tool round), then answers citing only what it was given or read."""
    texts = [(str(m.get("role")), text_of(m.get("content"))) for m in messages]
    unread = first_reads(texts, fenced_json) if tools_offered else ()
    if unread:
        return SimulatedReply("", sum(estimate_tokens(t) for _, t in texts), 8 * len(unread), unread)
    rng = random.Random(int(canonical_sha256({"model": model, "messages": texts}), 16))  # noqa: S311
    name = model.removeprefix(MODEL_PREFIX)
    briefing = read_briefing(texts, default_agent=name)
    kind = name.removeprefix(MISBEHAVE_PREFIX) if name.startswith(MISBEHAVE_PREFIX) else ""
    if kind == "once-malformed":
        repaired = any(role == "user" and text.startswith(REPROMPT_PREFIX) for role, text in texts)
        kind = "" if repaired else "malformed"
    first_head = briefing.heads[0].version_id if briefing.heads else None
    text = misbehave(kind, briefing.agent, first_head, rng) if kind else None
    if text is None:  # an unknown kind behaves (as without conformity or self-revision)
        settings = (conformity, self_revision) if not kind else (None, None)
        answer = council_answer if briefing.mode == "council" else judged
        output: AgentOutput = answer(briefing, rng, *settings)
        text = output.model_dump_json(exclude_none=True)
    prompt_tokens = sum(estimate_tokens(t) for _, t in texts)
    return SimulatedReply(text, prompt_tokens, estimate_tokens(text))
