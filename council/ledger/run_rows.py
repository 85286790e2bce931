"""The rows a run is on its way from claim to write (docs/architecture.md §7, delivery):
what the claim takes (:class:`ClaimedRun`) and what the writing transaction fences
(:class:`FencedRun`). One shape for both, frozen and typed, read by attribute; a fenced
run is also read by column name (``run["thread_id"]``), as the output check reads any
run row it is given.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, TypedDict
from uuid import UUID

from council.domain.requests import StoredRequest


@dataclass(frozen=True, slots=True)
class ClaimedRun:
    """A run taken for one attempt (``council_begin_run_v1``): the attempt number is its fencing token."""

    id: UUID
    attempt: int
    thread_id: UUID
    dispatch_id: UUID | None
    agent: str
    model: str
    provider: str
    simulated: bool
    round: int
    mode: str
    proposal_id: UUID | None
    request: StoredRequest | None  # stored by an earlier attempt, else None
    request_sha256: str | None
    executor: dict[str, object] | None  # the pinned executor (Profile.pinned())
    dispatch_rounds: int | None  # of its dispatch; None for a run outside one
    quorum_rule: bool  # its thread's rule set names min_council_answered (at the claim)
    control_of: UUID | None = None  # a control run: the deliberative run it re-runs blind
    usage: dict[str, object] | None = None  # what earlier attempts were billed (council.domain.bill)
    cost_usd: float | None = None
    agent_down: AgentDown | None = None  # its agent failed for good in an earlier round of its dispatch


class AgentDown(TypedDict):
    """The earliest run of an agent, in an earlier round of the same dispatch, that failed
    because the agent cannot answer (usage.failure: permanent or unreachable)."""

    round: int
    error: str | None


@dataclass(frozen=True, slots=True)
class FencedRun(Mapping[str, object]):
    """A run row locked by the writing transaction, whose ``attempt`` still owns it (``fence_run``)."""

    id: UUID
    attempt: int
    thread_id: UUID
    dispatch_id: UUID | None
    round: int
    agent: str
    mode: str
    proposal_id: UUID | None
    request_sha256: str | None
    control_of: UUID | None = None  # a control run: the deliberative run it re-runs blind

    def __getitem__(self, column: str) -> Any:
        if column not in _FENCED:
            raise KeyError(column)
        return getattr(self, column)

    def __iter__(self) -> Iterator[str]:
        return iter(_FENCED)

    def __len__(self) -> int:
        return len(_FENCED)


_FENCED = tuple(f.name for f in fields(FencedRun))


@dataclass(frozen=True, slots=True)
class RoundEnd:
    """What a dispatched run's end found of its round, asked under the dispatch's lock
    (``council_round_state_v1``): whether every run of it has ended, and then the node
    versions it claimed on or made. ``opened``: the next round's runs, when the writing
    transaction created and opened it (None: it did not; the follow-up decides)."""

    dispatch_id: UUID
    round: int
    closed: bool
    versions: tuple[UUID, ...] = ()
    opened: tuple[UUID, ...] | None = None
