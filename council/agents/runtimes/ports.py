"""Each runtime's implementation of the port (``council.agents.runtime``), by the name a
profile gives it: the one place the execution service finds how to converse with a run's
model."""

from __future__ import annotations

from collections.abc import Mapping

from council.agents.api_runtime import API
from council.agents.runtime import Runtime
from council.agents.runtimes.cli_runtime import CLAUDE, CODEX
from council.domain.vocabulary import RuntimeName

PORTS: Mapping[RuntimeName, Runtime] = {"litellm": API, "codex-cli": CODEX, "claude-code": CLAUDE}


def runtime_for(name: str) -> Runtime:
    """The port of the runtime a profile names (a profile's runtime is checked when it is loaded)."""
    for known, port in PORTS.items():
        if known == name:
            return port
    raise KeyError(f"no runtime {name!r}")
