"""The pinned agent CLIs in tests: skip (saying why) when they are not installed
or the kernel has no Landlock for Council's sandbox,
fail instead under ``COUNCIL_REQUIRE_AGENT_CLIS=1`` (set by ``.ci/run``); and the
profiles that point them at the fake model servers of ``tests/fakes``."""

from __future__ import annotations

import os

import pytest

from council.agents.runtimes import sandbox
from council.agents.runtimes.installed import PINNED, install_hint, installed_version

REQUIRE_ENV = "COUNCIL_REQUIRE_AGENT_CLIS"
KEYS = {
    "FAKE_OPENAI_KEY": "sk-fake-openai-3141592653",
    "FAKE_ANTHROPIC_KEY": "sk-ant-fake-2718281828",
    "FAKE_ZAI_KEY": "zai-fake-1618033988",
}


def missing() -> str | None:
    absent = [f"{p.package}@{p.version}" for r, p in PINNED.items() if installed_version(r) != p.version]
    if absent:
        return f"agent CLIs not installed: {', '.join(absent)}; {install_hint('codex-cli')}"
    if os.environ.get(sandbox.MODE_ENV, "").lower() == "off":
        return None
    return sandbox.unavailable_reason()  # a CLI run needs Council's sandbox (Landlock)


def require_agent_clis() -> None:
    """Skip the calling test when the CLIs are absent (fail under COUNCIL_REQUIRE_AGENT_CLIS=1)."""
    reason = missing()
    if reason is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def profiles_toml(
    *,
    responses: str,
    anthropic: str,
    glm: str | None = None,
    max_turns: int = 6,
    timeout_s: float = 60,
) -> str:
    """codex on the Codex CLI, claude on Claude Code, glm on Claude Code at its own endpoint."""
    text = f"""\
[profiles.codex]
runtime = "codex-cli"
model = "gpt-5.5"
provider = "openai"
api_base = "{responses}"
api_key_env = "FAKE_OPENAI_KEY"
max_turns = {max_turns}
timeout_s = {timeout_s}

[profiles.claude]
runtime = "claude-code"
model = "claude-sonnet-4-6"
provider = "anthropic"
api_base = "{anthropic}"
api_key_env = "FAKE_ANTHROPIC_KEY"
max_turns = {max_turns}
timeout_s = {timeout_s}
"""
    if glm is not None:
        text += f"""
[profiles.glm]
runtime = "claude-code"
model = "glm-5.1"
provider = "zhipu"
api_base = "{glm}"
api_key_env = "FAKE_ZAI_KEY"
max_turns = {max_turns}
timeout_s = {timeout_s}
"""
    return text
