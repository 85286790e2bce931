"""What a run was sent: the compiled request and the exposures it carries (docs/architecture.md §3, §7).

Values only. The compiler (``council.agents.compiler``) builds them; the
ledger stores the canonical request, its SHA-256 and the exposures before the
call; a retry re-sends exactly the stored request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NotRequired, Required, TypedDict

from council.domain.canonical import canonical_json, sha256_text
from council.domain.jsonvalue import JsonObject
from council.domain.reentry import ReentryPacket


@dataclass(frozen=True)
class Exposure:
    """Something a run was shown: another run's stance (exposure) or a bare proposition (not)."""

    kind: str  # stance | proposition
    channel: str  # briefing | previous_round | explicit | mcp:<tool>
    exposed_to_run_id: str | None = None
    claim_id: str | None = None
    node_version_id: str | None = None


class SandboxRow(TypedDict):
    """An agent CLI runtime's settings under one of Council's sandbox modes."""

    sandbox: str
    council_sandbox: str
    allowed_tools: list[str]
    approval: NotRequired[str]  # Codex only


class CliSettings(SandboxRow):
    """An agent CLI's effective settings: its runtime's sandbox row, then Council's."""

    max_turns: int | None
    output_schema: JsonObject
    evidence_files: list[dict[str, str]]
    params: JsonObject


class StoredRequest(TypedDict, total=False):
    """What a run was sent, as hashed and stored (``agent_runs.request``): an API request
    (model, messages, params; tools and tool_turns when a tool was offered) or an agent
    CLI's (runtime, runtime_version, model, prompt, settings)."""

    model: Required[str]
    messages: list[dict[str, str]]
    params: JsonObject
    tools: list[JsonObject]
    tool_turns: int
    runtime: str
    runtime_version: str | None
    prompt: str
    settings: CliSettings


@dataclass(frozen=True)
class CompiledRequest:
    """A litellm request (model, messages, parameters), or an agent CLI's: the runtime
    and its version, the model, the one prompt and the effective settings (sandbox,
    allowed tools, turn limit, output schema, evidence files, parameters)."""

    model: str
    messages: list[dict[str, str]]
    params: JsonObject
    exposures: list[Exposure] = field(default_factory=list)
    input_features: list[str] = field(default_factory=list)
    runtime: str = "litellm"
    runtime_version: str | None = None
    prompt: str | None = None
    settings: CliSettings | None = None
    # An API run's tools (only ``read_evidence``, when evidence was left out of the briefing)
    # and the most tool rounds it may take; absent from the stored request when there are none.
    tools: list[JsonObject] | None = None
    tool_turns: int = 0

    def canonical(self) -> StoredRequest:
        """What is hashed and stored (never a key)."""
        if self.runtime == "litellm":
            request: StoredRequest = {"model": self.model, "messages": self.messages, "params": self.params}
            if self.tools:
                request |= {"tools": self.tools, "tool_turns": self.tool_turns}
            return request
        if self.prompt is None or self.settings is None:
            raise ValueError("an agent CLI's request has a prompt and settings")
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
