"""Threads: what `council thread …` and `GET /threads…` return."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import Field

from council.domain.results.base import Result, Row
from council.domain.results.budgets import BudgetState


class ReviewSetting(Result):
    """How the thread's opened retraction proposals are reviewed: ``review`` is
    auto | delayed | manual (``delay_s`` for delayed); ``agents`` the profiles a
    review is dispatched to (None: the profiles that worked the thread); ``set_at``
    is None for the default (a thread whose setting was never given)."""

    review: str
    delay_s: int
    agents: list[str] | None = None
    description: str
    actor: str | None = None
    reason: str = ""
    set_at: datetime | None = None


class Thread(Row):
    id: UUID
    title: str
    objective: str
    rule_set_id: str
    grouping_algorithm_id: str
    created_at: datetime


class ThreadCreated(Thread):
    main_branch_id: UUID
    review: ReviewSetting


class ThreadCounts(Result):
    branches: int
    nodes: int
    node_versions: int
    runs: int
    evidence: int
    events: int


class ThreadCost(Result):
    """What a thread's runs cost: ``usd`` summed over the priced runs; tokens summed over
    every run that reported them; ``runs_unpriced`` counts runs a call of which could not be
    priced (their cost is unknown, not 0), and ``unpriced_reasons`` says why, once each
    (``no price for MODEL in litellm's price map``)."""

    usd: float
    prompt_tokens: int
    completion_tokens: int
    runs_priced: int
    runs_unpriced: int
    unpriced_reasons: list[str] = Field(default_factory=list)


class ThreadShown(Thread):
    main_branch_id: UUID
    counts: ThreadCounts
    cost: ThreadCost
    review: ReviewSetting
    budget: BudgetState


class ThreadListed(Thread):
    """A thread as `council thread list` shows it: ``status`` is ``running`` (a run in
    flight), ``open`` (a node head open or tentative), ``resolved`` (every head decided)
    or ``empty`` (no node yet); its ``runs`` (``runs_in_flight`` not ended yet) cost
    ``cost_usd`` over the priced ones (``runs_unpriced`` could not be priced)."""

    status: str
    runs: int
    runs_in_flight: int
    cost_usd: float
    runs_unpriced: int


class ThreadList(Result):
    items: list[ThreadListed]


class ReviewSettings(Result):
    """A thread's review setting in force and its history, oldest first."""

    thread_id: UUID
    current: ReviewSetting
    history: list[ReviewSetting]
