"""The runtime port (docs/architecture.md §7): how one attempt of a run converses with its
model, whatever runs it.

A :class:`Runtime` answers :meth:`Runtime.converse` with an :class:`Answer`: an API model
through the gateway (``council.agents.api_runtime``: litellm, the OpenAI SDK route, the
simulated provider), an agent CLI as a process (``council.agents.runtimes.cli_runtime``:
the Codex CLI, Claude Code). Each owns its transport and nothing else: how a call is made
and re-prompted, how its usage is priced, what its trace is and which evidence it opened,
all handed to the attempt's :class:`Record` as they happen. The one loop that asks, checks
the answer, re-prompts once with the reason and applies it is ``council.services.execution``'s;
so are the bill of a failed attempt, the skip of a dead agent, the classification of an
error (``council.agents.errors``: transient, unreachable, permanent) and ``RetryAt``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypedDict

from council.domain.bill import Bill
from council.domain.profile import Profile
from council.domain.requests import StoredRequest


class Opened(TypedDict):
    """One evidence item a run opened: the id, the file (or ``inline``, ``tool``) and the tool."""

    evidence_id: str
    file: str
    tool: str


class FencedOut(Exception):
    """A newer attempt owns the run: this one stops where it stands, and writes nothing more."""


@dataclass(frozen=True)
class Answer:
    """What a runtime answered, for the loop to check and apply.

    ``text`` (redacted) is kept with the attempt as round ``round`` (0 = its first call;
    each tool or re-prompt round after it) and checked as the output. ``citable`` is the
    evidence the run was given or opened, all it may cite (None: it may cite anything
    the output check accepts), ``reads`` how this runtime reads evidence, said in the
    refusal of a citation of something unread (None: the API wording). ``refused`` is
    the runtime's own reason this is no answer (a tool call past the rounds allowed); such
    an answer was kept already. ``conversation`` is the turns that led to it, for a
    runtime that re-prompts by continuing them (empty for one that re-prompts from the
    stored prompt)."""

    text: str
    round: int
    citable: tuple[str, ...] | None = None
    reads: str | None = None
    refused: str | None = None
    conversation: tuple[Mapping[str, object], ...] = ()


@dataclass(frozen=True)
class Reprompt:
    """The answer refused and why: the one re-prompt the loop allows an attempt."""

    answer: Answer
    reason: str


@dataclass(frozen=True)
class Ask:
    """What the loop asks a runtime: the stored request (exactly what was hashed), or the
    re-prompt that follows a refused answer to it."""

    request: StoredRequest
    reprompt: Reprompt | None = None

    def reprompted(self, answer: Answer, reason: str) -> Ask:
        return Ask(self.request, Reprompt(answer, reason))


class Record(Protocol):
    """What an attempt records as its runtime converses, however the attempt ends: the
    calls billed, the answers that are not checked, the evidence opened, the traces."""

    @property
    def bill(self) -> Bill:
        """What the run's calls were billed, over every attempt."""
        ...

    def billed(
        self, tokens: Mapping[str, object] | None, cost_usd: float | None, unpriced: str | None
    ) -> int:
        """One answered call, billed before its answer is read; its round within the attempt."""
        ...

    def keep(self, round_no: int, text: str) -> None:
        """Keep an answer the loop will not check (a tool round's calls), in its own transaction."""
        ...

    def evidence(self, ids: Sequence[str]) -> Mapping[str, str]:
        """The text of each evidence item by id (an agent CLI's working directory)."""
        ...

    def read(self, ids: Sequence[str], tool: str) -> Mapping[str, str]:
        """The text of the items read now, each found one recorded as opened with ``tool``
        first, fenced on the attempt (:class:`FencedOut` when a newer attempt owns the run)."""
        ...

    @property
    def started(self) -> float:
        """When the attempt began conversing (``time.monotonic()``): a deadline covers its calls."""
        ...

    def trace(self, trace: Mapping[str, object], opened: Sequence[Opened] = ()) -> None:
        """One call's trace and the evidence it opened, stored with the attempt's end."""
        ...


class Runtime(Protocol):
    """One runtime's side of an attempt's conversation with its model."""

    def given(self, request: StoredRequest) -> Sequence[Opened]:
        """The evidence the request itself gives the model (an API briefing's inline texts),
        recorded as opened with the request, before any call."""
        ...

    def converse(self, ask: Ask, profile: Profile, record: Record) -> Answer:
        """Call the model on ``ask`` (every call billed to ``record`` as it returns) until it
        gives an answer; raise ``TransientLLMError`` (``UnreachableLLMError``) or
        ``PermanentLLMError`` when it cannot, :class:`FencedOut` when the attempt lost the run."""
        ...
