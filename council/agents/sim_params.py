"""The simulated provider's call settings (``council.agents.simulated``): how long a
call waits (``COUNCIL_SIM_LATENCY``: a fixed time, or a uniform spread around it,
spent sleeping, not computing) and the ``conformity`` call parameter."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

from council.domain.canonical import sha256_text

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
