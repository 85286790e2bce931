"""What a run's calls were billed, over every attempt (pure; docs/guide/budgets.md).

Every call a provider answered is billed, whether its answer was used, refused by the
output check, or followed by a failure: a tool round, the answer before a re-prompt, the
calls of an attempt that a transient error cut off (carried to the next attempt through
the run's row), and the calls of a run that then failed. ``usage`` is the document
stored on the run (``agent_runs.usage``): ``calls``, the provider's token counts summed,
and what happened on the way (``tool_rounds``, ``reprompted``, ``unreachable_tries``);
``cost_usd`` is the sum of each call's price from litellm's price map, None once a call
could not be priced, with ``usage.unpriced_reason`` saying why (the model has no price,
or the provider reported no usage). A run with no billed call costs 0.

``usage.failure`` marks a failed run whose agent cannot answer in this dispatch:
``permanent`` (the provider refused the request, or this worker cannot run the pinned
executor) or ``unreachable`` (its endpoint could not be reached on any try). A later
round's run of that agent is then failed at once, without a call
(``council.services.execution``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

FAILURES = ("permanent", "unreachable")  # usage.failure: the agent is down for its dispatch


@dataclass
class Bill:
    usage: dict[str, Any] = field(default_factory=lambda: {"calls": 0})
    cost_usd: float | None = 0.0

    @classmethod
    def carried(cls, usage: Mapping[str, Any] | None, cost_usd: float | None) -> Bill:
        """What earlier attempts of the run were billed (nothing: a new bill)."""
        if not usage:
            return cls()
        kept = {k: v for k, v in usage.items() if k not in ("failure", "simulated")}
        kept.setdefault("calls", 0)
        return cls(kept, cost_usd if "unpriced" not in kept else None)

    @property
    def calls(self) -> int:
        value = self.usage.get("calls", 0)
        return int(value) if isinstance(value, int | float) else 0

    def add(self, tokens: Mapping[str, object] | None, cost_usd: float | None, unpriced: str | None) -> None:
        """One answered call: its token counts and its price (None: ``unpriced`` says why)."""
        self.usage["calls"] = self.calls + 1
        for key, value in (tokens or {}).items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                self.usage[key] = self.usage.get(key, 0) + value
        if cost_usd is None:
            self.cost_usd = None
            self.usage["unpriced"] = True
            self.usage.setdefault("unpriced_reason", unpriced or "the call could not be priced")
        elif self.cost_usd is not None:
            self.cost_usd = round(self.cost_usd + cost_usd, 12)

    def note(self, key: str, value: object = True) -> None:
        self.usage[key] = value

    def count(self, key: str) -> int:
        """Add one to the counter ``key`` and return it."""
        value = self.usage.get(key, 0)
        self.usage[key] = (int(value) if isinstance(value, int | float) else 0) + 1
        return int(self.usage[key])

    def stored(self, failure: str | None = None) -> tuple[dict[str, Any] | None, float | None]:
        """The usage document and cost to store on the run: None and None for a run
        nothing was billed for and nothing is to be said about; a cost of 0 for one with
        no billed call (nothing was billed, so nothing is unknown)."""
        usage = dict(self.usage)
        if failure is not None:
            usage["failure"] = failure
        if self.calls == 0 and len(usage) == 1:
            return None, None
        return usage, (0.0 if self.calls == 0 else self.cost_usd)
