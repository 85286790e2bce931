"""The facts of one recorded debate that `council eval` measures (council.domain.observation
and the measures it calls, council.domain.eval_council and eval_effective): its turns, its
claims, the resolutions in force and its rival versions. Built by the observation service
from the ledger's typed rows (council.ledger.observation)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple


# Claim and TurnFacts are named tuples, not frozen dataclasses: 10,000 records make 120,000
# of each, and a frozen dataclass costs three times as much to build.
class Claim(NamedTuple):
    run_id: str
    node: str  # node version id
    type: str
    confidence: float


class TurnFacts(NamedTuple):
    run_id: str
    agent: str
    provider: str
    answer: str | None
    confidence: float | None
    saw: tuple[str, ...] = ()  # run ids whose stance it had seen
    parent_run_id: str | None = None
    input_features: frozenset[str] = frozenset()
    cited: frozenset[str] = frozenset()  # evidence ids it cited
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    usd: float | None = None
    model: str = ""  # the run's model (min_effective_support's table is per model)
    control_answer: str | None = None  # its control run's answer (dispatch --controls), if any


@dataclass(frozen=True)
class RecordFacts:
    id: str
    truth: Mapping[str, bool]  # node version id -> the resolution in force
    turns: tuple[TurnFacts, ...]  # in turn order
    claims: tuple[Claim, ...] = ()
    rivals: Mapping[str, frozenset[str]] = field(default_factory=dict)  # node version -> its rival versions

    @property
    def resolved(self) -> bool:
        return bool(self.truth)

    def correct(self, answer: str | None) -> bool:
        return answer is not None and self.truth.get(answer) is True
