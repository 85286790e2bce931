"""Where the agent CLIs live and which versions are pinned (docs/guide/agent-runtimes.md).

`make agent-clis` installs the pinned packages from npm into a project-local,
git-ignored folder, ``.tools/agent-clis`` at the repository's root, once;
``COUNCIL_AGENT_CLIS`` names another folder holding the same layout (an
``npm install --prefix`` folder). The versions here and in the Makefile are the
same pair (tests/unit/test_agent_runtimes.py checks it).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from council.settings import settings

TOOLS_ENV = "COUNCIL_AGENT_CLIS"


@dataclass(frozen=True)
class CliPackage:
    runtime: str
    package: str  # the npm package
    version: str  # the pinned version
    command: str  # its executable under node_modules/.bin


PINNED = {
    "codex-cli": CliPackage("codex-cli", "@openai/codex", "0.171.0", "codex"),
    "claude-code": CliPackage("claude-code", "@anthropic-ai/claude-code", "2.1.197", "claude"),
}


def tools_dir() -> Path:
    explicit = settings().agent_clis
    if explicit:
        return explicit
    return Path(__file__).resolve().parents[3] / ".tools" / "agent-clis"


def executable(runtime: str) -> Path:
    return tools_dir() / "node_modules" / ".bin" / PINNED[runtime].command


def installed_version(runtime: str) -> str | None:
    """The version of the runtime's CLI installed in the tools folder, or None."""
    package = PINNED[runtime]
    manifest = tools_dir() / "node_modules" / package.package / "package.json"
    if not os.access(executable(runtime), os.X_OK):
        return None
    try:
        version = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError):
        return None
    return str(version) if version else None


def version_to_pin(runtime: str) -> str:
    """The version a dispatch pins: the installed one, else the project's pin."""
    return installed_version(runtime) or PINNED[runtime].version


def install_hint(runtime: str) -> str:
    package = PINNED[runtime]
    return (
        f"install it with `make agent-clis` (npm install --prefix .tools/agent-clis "
        f"{package.package}@{package.version}), or set {TOOLS_ENV} to a folder holding it"
    )


def missing_reason(runtime: str, pinned_version: str | None) -> str | None:
    """Why this machine cannot run the pinned CLI (None: it can)."""
    package = PINNED[runtime]
    found = installed_version(runtime)
    if found is None:
        return f"the {package.package} CLI is not installed in {tools_dir()}: {install_hint(runtime)}"
    if pinned_version and found != pinned_version:
        return (
            f"the run is pinned to {package.package} {pinned_version}, this worker has {found}: "
            f"{install_hint(runtime)}"
        )
    return None
