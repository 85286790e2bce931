"""Calibration per model (docs/architecture.md §12): how often a model's
endorsements survive, how often its disputes are vindicated, and whether its
stated confidence matches what became of the nodes.

The same figures as the views ``council_v_claim_outcomes`` and
``council_v_calibration`` (migration 0012), stated in Python; a test keeps them
in agreement. What became of a claim's node version: the status of its latest
consolidation (``live``, ``superseded``, ``retracted``), else ``killed`` when the
version was killed, else ``open`` (unresolved). The node *held* when live or
superseded (superseded is historically valid, replaced by a newer
consolidation) and *fell* when retracted or killed. An endorsement was right
when the node held, a dispute when it fell. Brier score: the mean of
(confidence − right)² over resolved claims. Confidence buckets of width 0.2.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

BUCKETS = 5
HELD = ("live", "superseded")
FELL = ("retracted", "killed")
_PLACES = Decimal("0.000001")


@dataclass(frozen=True)
class ClaimOutcome:
    model: str
    provider: str
    claim_type: str  # endorse | dispute
    confidence: Decimal
    outcome: str  # live | superseded | retracted | killed | open

    @property
    def resolved(self) -> bool:
        return self.outcome != "open"

    @property
    def right(self) -> bool:
        return (self.outcome in HELD) == (self.claim_type == "endorse")


@dataclass(frozen=True)
class Bucket:
    low: Decimal
    high: Decimal
    resolved: int
    mean_confidence: Decimal | None
    right_share: Decimal | None


@dataclass(frozen=True)
class ModelCalibration:
    model: str
    provider: str
    endorsements: int
    endorsements_live: int
    endorsements_superseded: int
    endorsements_retracted: int
    disputes: int
    disputes_vindicated: int
    resolved: int
    right: int
    brier: Decimal | None
    reliability: tuple[Bucket, ...]


def bucket_of(confidence: Decimal) -> int:
    return min(int(confidence * BUCKETS), BUCKETS - 1)


def calibrate(claims: Iterable[ClaimOutcome]) -> list[ModelCalibration]:
    """One calibration per (model, provider), in name order."""
    by_model: dict[tuple[str, str], list[ClaimOutcome]] = {}
    for claim in claims:
        by_model.setdefault((claim.model, claim.provider), []).append(claim)
    return [_one(model, provider, found) for (model, provider), found in sorted(by_model.items())]


def _mean(values: list[Decimal]) -> Decimal | None:
    return (
        (sum(values, Decimal(0)) / len(values)).quantize(_PLACES, rounding=ROUND_HALF_UP) if values else None
    )


def _one(model: str, provider: str, claims: list[ClaimOutcome]) -> ModelCalibration:
    endorse = [c for c in claims if c.claim_type == "endorse"]
    dispute = [c for c in claims if c.claim_type == "dispute"]
    resolved = [c for c in claims if c.resolved]
    errors = [(c.confidence - (1 if c.right else 0)) ** 2 for c in resolved]
    buckets = []
    for index in range(BUCKETS):
        inside = [c for c in resolved if bucket_of(c.confidence) == index]
        buckets.append(
            Bucket(
                low=Decimal(index) / BUCKETS,
                high=Decimal(index + 1) / BUCKETS,
                resolved=len(inside),
                mean_confidence=_mean([c.confidence for c in inside]),
                right_share=_mean([Decimal(1 if c.right else 0) for c in inside]),
            )
        )
    return ModelCalibration(
        model=model,
        provider=provider,
        endorsements=len(endorse),
        endorsements_live=sum(1 for c in endorse if c.outcome == "live"),
        endorsements_superseded=sum(1 for c in endorse if c.outcome == "superseded"),
        endorsements_retracted=sum(1 for c in endorse if c.outcome == "retracted"),
        disputes=len(dispute),
        disputes_vindicated=sum(1 for c in dispute if c.outcome in FELL),
        resolved=len(resolved),
        right=sum(1 for c in resolved if c.right),
        brier=_mean(errors),
        reliability=tuple(buckets),
    )
