"""The simulated provider's call settings (``council.agents.simulated``): how long a
call waits (``COUNCIL_SIM_LATENCY``: a fixed time, or a uniform spread around it,
spent sleeping, not computing), the ``conformity`` and the ``self_revision`` call parameters."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any, Literal

from council.domain.canonical import sha256_text

Stance = Literal["endorse", "dispute", "abstain"]
STANCES: tuple[Stance, ...] = ("endorse", "dispute", "abstain")

LATENCY_ENV = "COUNCIL_SIM_LATENCY"
LATENCY_ENV_FIXED = "COUNCIL_SIM_LATENCY_S"  # the older name: a fixed time
_LATENCY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:(?:±|\+-|\+/-)\s*(\d+(?:\.\d+)?))?\s*$")


def latency_spec(env: Mapping[str, str]) -> str:
    return env.get(LATENCY_ENV) or env.get(LATENCY_ENV_FIXED) or "0"


def latency_s(spec: str, key: str) -> float:
    """Seconds a simulated call waits: ``"2"`` is 2 s; ``"2±0.5"`` (or ``2+-0.5``) is
    uniform in 1.5–2.5 s, drawn from ``key`` (the answer), so a request always waits
    the same. A spec that is not one of these is refused (ValueError)."""
    found = _LATENCY.match(spec)
    if found is None:
        raise ValueError(f"{LATENCY_ENV} must be seconds, or seconds±spread (e.g. 2±0.5), got {spec!r}")
    centre, spread = float(found.group(1)), float(found.group(2) or 0)
    if spread == 0:
        return centre
    draw = random.Random(sha256_text(key)).uniform(-spread, spread)  # noqa: S311
    return max(0.0, centre + draw)


def conformity_of(params: Mapping[str, Any] | None) -> float | None:
    """The ``conformity`` call parameter, clamped to [-1, 1] (None when absent)."""
    value = (params or {}).get("conformity")
    if value is None or isinstance(value, bool):
        return None
    try:
        return min(1.0, max(-1.0, float(value)))
    except (TypeError, ValueError):
        return None


def self_revision_of(params: Mapping[str, object] | None) -> float | None:
    """The ``self_revision`` call parameter, a probability clamped to [0, 1] (None when
    absent or 0: the provider then answers exactly as without it)."""
    value = (params or {}).get("self_revision")
    if value is None or isinstance(value, bool):
        return None
    try:
        rate = min(1.0, max(0.0, float(str(value))))
    except ValueError:
        return None
    return rate or None


def revised_stance(agent: str, version_id: str, round_no: int, stance: Stance, rate: float) -> Stance:
    """An agent's stance on a head after its self-revisions up to round ``round_no``: in each
    round after the first, with probability ``rate``, it moves to one of the two other
    stances, drawn from the agent, head and round alone (never from what it was shown), so a
    control run on the blind briefing revises exactly as its deliberative run does."""
    for k in range(2, round_no + 1):
        draw = random.Random(int(sha256_text(f"self-revision:{agent}:{version_id}:{k}"), 16))  # noqa: S311
        if draw.random() < rate:
            stance = draw.choice([s for s in STANCES if s != stance])
    return stance
