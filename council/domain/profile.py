"""A resolved agent profile: the executor a run is pinned to (docs/architecture.md §7).

A value only: which runtime and model run, the provider family, non-secret
parameters and the *name* of the key variable — never a key. It is resolved
where a run is dispatched (``council.agents.profiles``), stored on the run
(``pinned()``) and executed by the worker exactly as stored (``from_pinned``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from council.domain.vocabulary import RUNTIMES


@dataclass(frozen=True)
class Profile:
    name: str
    model: str  # the model to call: council-sim/<name> when simulated
    provider: str  # the model family, kept when simulated
    params: Mapping[str, Any] = field(default_factory=dict)
    api_key_env: str = ""  # the variable's name, never its value
    simulated: bool = False
    runtime: str = "litellm"  # what will run: the simulator runs through litellm
    api_base: str | None = None
    max_turns: int | None = None
    timeout_s: float | None = None
    cli_version: str | None = None  # an agent CLI's version, pinned at dispatch
    stands_in_for: Mapping[str, str] | None = None  # a simulated profile's own runtime and model
    why: str = ""  # why it is real or simulated where it was resolved
    # How long an answer is expected to be, in tokens: what a budget reserves for its output
    # (docs/guide/budgets.md). Read where the run is dispatched, so never pinned.
    expected_output_tokens: int | None = None

    def pinned(self) -> dict[str, Any]:
        """The executor a run stores at dispatch (no secret: names only)."""
        return {
            "profile": self.name,
            "runtime": self.runtime,
            "model": self.model,
            "provider": self.provider,
            "api_base": self.api_base,
            "api_key_env": self.api_key_env,
            "params": dict(self.params),
            "max_turns": self.max_turns,
            "timeout_s": self.timeout_s,
            "cli_version": self.cli_version,
            "simulated": self.simulated,
            "stands_in_for": dict(self.stands_in_for) if self.stands_in_for else None,
            "why": self.why,
        }

    @classmethod
    def from_pinned(cls, data: Any) -> Profile:
        """The executor a run stored; ValueError when the record is malformed."""
        if not isinstance(data, Mapping):
            raise ValueError("the run has no pinned executor")
        wanted = {"profile": str, "runtime": str, "model": str, "provider": str, "api_key_env": str,
                  "params": Mapping, "simulated": bool}  # fmt: skip
        for key, kind in wanted.items():
            if not isinstance(data.get(key), kind):
                raise ValueError(f"the pinned executor's {key} is missing or malformed")
        if data["runtime"] not in RUNTIMES:
            raise ValueError(f"the pinned executor's runtime {data['runtime']!r} is unknown")
        return cls(
            name=data["profile"],
            model=data["model"],
            provider=data["provider"],
            params=dict(data["params"]),
            api_key_env=data["api_key_env"],
            simulated=data["simulated"],
            runtime=data["runtime"],
            api_base=data.get("api_base"),
            max_turns=data.get("max_turns"),
            timeout_s=data.get("timeout_s"),
            cli_version=data.get("cli_version"),
            stands_in_for=data.get("stands_in_for"),
            why=str(data.get("why") or ""),
        )
