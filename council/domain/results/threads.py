"""Threads: what `council thread …` and `GET /threads…` return."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from council.domain.results.base import Result, Row


class Thread(Row):
    id: UUID
    title: str
    objective: str
    rule_set_id: str
    grouping_algorithm_id: str
    created_at: datetime


class ThreadCreated(Thread):
    main_branch_id: UUID


class ThreadCounts(Result):
    branches: int
    nodes: int
    node_versions: int
    runs: int
    evidence: int
    events: int


class ThreadShown(Thread):
    main_branch_id: UUID
    counts: ThreadCounts


class ThreadList(Result):
    items: list[Thread]
