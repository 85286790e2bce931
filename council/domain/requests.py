"""What a run was sent: the compiled request and the exposures it carries (docs/architecture.md §3, §7).

Values only. The compiler (``council.agents.compiler``) builds them; the
ledger stores the canonical request, its SHA-256 and the exposures before the
call; a retry re-sends exactly the stored request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from council.domain.canonical import canonical_json, sha256_text
from council.domain.reentry import ReentryPacket


@dataclass(frozen=True)
class Exposure:
    """Something a run was shown: another run's stance (exposure) or a bare proposition (not)."""

    kind: str  # stance | proposition
    channel: str  # briefing | previous_round | explicit | mcp:<tool>
    exposed_to_run_id: str | None = None
    claim_id: str | None = None
    node_version_id: str | None = None


@dataclass(frozen=True)
class CompiledRequest:
    """A litellm request (model, messages, parameters), or an agent CLI's: the runtime
    and its version, the model, the one prompt and the effective settings (sandbox,
    allowed tools, turn limit, output schema, evidence files, parameters)."""

    model: str
    messages: list[dict[str, str]]
    params: dict[str, Any]
    exposures: list[Exposure] = field(default_factory=list)
    input_features: list[str] = field(default_factory=list)
    runtime: str = "litellm"
    runtime_version: str | None = None
    prompt: str | None = None
    settings: dict[str, Any] | None = None
    # An API run's tools (only ``read_evidence``, when evidence was left out of the briefing)
    # and the most tool rounds it may take; absent from the stored request when there are none.
    tools: list[dict[str, Any]] | None = None
    tool_turns: int = 0

    def canonical(self) -> dict[str, Any]:
        """What is hashed and stored (never a key)."""
        if self.runtime == "litellm":
            request: dict[str, Any] = {"model": self.model, "messages": self.messages, "params": self.params}
            if self.tools:
                request |= {"tools": self.tools, "tool_turns": self.tool_turns}
            return request
        return {
            "runtime": self.runtime,
            "runtime_version": self.runtime_version,
            "model": self.model,
            "prompt": self.prompt,
            "settings": self.settings,
        }

    @property
    def sha256(self) -> str:
        return sha256_text(canonical_json(self.canonical()))


def packet_stances(packet: ReentryPacket, channel: str) -> list[Exposure]:
    """The stances a reentry packet carries, as exposures arriving by ``channel``:
    its attributed disputes (a blind packet carries none; head claim counts are
    unattributed and name no run)."""
    return [
        Exposure("stance", channel, exposed_to_run_id=c.run_id)
        for c in packet.counterarguments
        if c.kind == "dispute" and c.run_id is not None
    ]
