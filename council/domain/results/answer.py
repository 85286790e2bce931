"""The council's answer, first in what `council ask` and `council export` return
(docs/architecture.md §9): what it established — or that it established nothing — with the
live alternatives and their independent support, then each agent's own summary."""

from __future__ import annotations

from uuid import UUID

from pydantic import Field

from council.domain.results.base import Result


class AnswerGroup(Result):
    """An independence group of the runs that claimed on a proposition."""

    kind: str  # support | dispute
    agents: list[str]  # the agents of its runs, sorted (a run's agent once per group)
    runs: list[UUID]
    # runs whose dispute is derived from their endorsing a rival (exclusive_alternatives):
    # counted by the rules as a dispute, never written as a claim
    derived_runs: list[UUID] = Field(default_factory=list)


class Alternative(Result):
    """A live proposition answering the question, other than the answer."""

    version_id: UUID
    content: str
    consolidated: bool  # a live consolidation of it stands (the same answer in other words)
    rival: bool  # in the answer's alternative set (none established: in any set) — options, contradicts
    support: int  # independent support groups
    disputes: int  # independent dispute groups
    support_groups: list[AnswerGroup]
    dispute_groups: list[AnswerGroup]


class Answer(Result):
    """What the council established: a consolidated proposition (of several that state it in
    other words, the one with the most independent support, then the earliest), or none
    (``established`` false, ``version_id`` and ``content`` null); and the other live
    propositions answering the question, rivals first."""

    established: bool
    version_id: UUID | None
    content: str | None
    support: int  # the answer's independent support groups (0 when none is established)
    support_groups: list[AnswerGroup]
    dispute_groups: list[AnswerGroup]
    alternatives: list[Alternative]
    # rivals that each hold a live consolidation (only a rule set without
    # exclusive_alternatives lets that happen): why nothing is established; else null
    conflict: str | None = None


class AgentSummary(Result):
    """An agent's own summary, in its words: the ``summary`` of the answer it gave last."""

    agent: str
    run_id: UUID
    round: int
    summary: str
