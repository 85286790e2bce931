"""The runtimes, chosen once: a profile's ``runtime`` names one ``RuntimeKind`` here.

A runtime is an API model called through litellm (``council.agents.gateway``), or an
agent CLI run as a process (``council.agents.runtimes.cli``), whose ``CliDriver`` knows
its flags, environment, event stream, provider header and read tool. Code that differs
by runtime asks ``runtime(name)`` instead of comparing names. How a run converses with
its model on each runtime is the port's (``council.agents.runtime``; ``ports.runtime_for``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from council.agents.runtimes import claude, codex
from council.agents.runtimes.trace import Trace
from council.agents.runtimes.workdir import Attempt
from council.domain.requests import CliSettings, SandboxRow
from council.domain.vocabulary import RuntimeName

Watch = Callable[[], str | None]


@dataclass(frozen=True)
class Launch:
    """How to start one call of an agent CLI: its argv, its own environment, what to watch."""

    argv: list[str]
    env: dict[str, str]
    watch: Watch | None


class CliDriver(Protocol):
    """What differs between the agent CLIs."""

    @property
    def settings_by_sandbox(self) -> Mapping[str, SandboxRow]:
        """The runtime's own settings under each of Council's sandbox modes."""
        ...

    @property
    def read_tool(self) -> str:
        """The tool an opened evidence file is recorded as read with."""
        ...

    def launch(
        self,
        executable: Path,
        settings: CliSettings,
        attempt: Attempt,
        *,
        model: str,
        prompt: str,
        api_base: str | None,
        key_env: str,
        key: str,
        proxy_key: str | None,
        login: bool,
    ) -> Launch:
        """The command and environment of one call (``proxy_key``: the key the CLI holds
        when Council's proxy carries the real one, else None)."""
        ...

    def read(self, stdout: str, attempt: Attempt, trace: Trace) -> tuple[str | None, str | None]:
        """Fill ``trace`` from the event stream: (the answer text or None, a failure or None)."""
        ...

    def credential_header(self, key: str) -> tuple[str, str]:
        """The header carrying ``key`` to the CLI's provider."""
        ...

    def error_document(self, status: int, message: str) -> dict[str, object]:
        """An error answered by Council's proxy, in the provider's shape the CLI reads."""
        ...


class RuntimeKind(Protocol):
    """What a runtime is: its name, whether it takes call parameters, its CLI driver."""

    @property
    def name(self) -> RuntimeName: ...

    @property
    def takes_params(self) -> bool:
        """Whether a profile may give call parameters (params)."""
        ...

    @property
    def cli(self) -> CliDriver | None:
        """The agent CLI's driver; None for an API model, called through litellm."""
        ...


class _CodexCli:
    settings_by_sandbox = codex.SETTINGS_BY_SANDBOX
    read_tool = "exec_command"

    def launch(
        self,
        executable: Path,
        settings: CliSettings,
        attempt: Attempt,
        *,
        model: str,
        prompt: str,
        api_base: str | None,
        key_env: str,
        key: str,
        proxy_key: str | None,
        login: bool,
    ) -> Launch:
        argv = codex.command(executable, model, settings, api_base, key_env, prompt, attempt)
        env = codex.environment(attempt, key_env, login)
        if key_env:
            env[key_env] = proxy_key if proxy_key is not None else key
        return Launch(argv, env, codex.turn_watch(attempt.out / "events.jsonl", settings.get("max_turns")))

    def read(self, stdout: str, attempt: Attempt, trace: Trace) -> tuple[str | None, str | None]:
        return codex.read(stdout, attempt, trace), None

    def credential_header(self, key: str) -> tuple[str, str]:
        return ("authorization", f"Bearer {key}")

    def error_document(self, status: int, message: str) -> dict[str, object]:
        return {"error": {"message": message, "type": "council_proxy", "code": status}}


class _ClaudeCode:
    settings_by_sandbox = claude.SETTINGS_BY_SANDBOX
    read_tool = "Read"

    def launch(
        self,
        executable: Path,
        settings: CliSettings,
        attempt: Attempt,
        *,
        model: str,
        prompt: str,
        api_base: str | None,
        key_env: str,
        key: str,
        proxy_key: str | None,
        login: bool,
    ) -> Launch:
        argv = claude.command(executable, model, settings, prompt)
        cli_key = proxy_key if proxy_key is not None else key or None
        env = claude.environment(attempt, api_base, cli_key, login)
        return Launch(argv, env, claude.auth_watch(attempt.out / "events.jsonl"))

    def read(self, stdout: str, attempt: Attempt, trace: Trace) -> tuple[str | None, str | None]:
        return claude.read(stdout, trace)

    def credential_header(self, key: str) -> tuple[str, str]:
        return ("x-api-key", key)

    def error_document(self, status: int, message: str) -> dict[str, object]:
        return {"type": "error", "error": {"type": "api_error", "message": message}}


@dataclass(frozen=True)
class _Runtime:
    name: RuntimeName
    takes_params: bool
    cli: CliDriver | None


RUNTIME_OF: Mapping[RuntimeName, RuntimeKind] = {
    "litellm": _Runtime("litellm", takes_params=True, cli=None),
    "codex-cli": _Runtime("codex-cli", takes_params=True, cli=_CodexCli()),
    "claude-code": _Runtime("claude-code", takes_params=False, cli=_ClaudeCode()),
}


def runtime(name: str) -> RuntimeKind:
    """The runtime a profile names (a profile's runtime is checked when it is loaded)."""
    for known, found in RUNTIME_OF.items():
        if known == name:
            return found
    raise KeyError(f"no runtime {name!r}")


def cli_driver(name: str) -> CliDriver:
    """The driver of an agent CLI runtime (an API model has none)."""
    driver = runtime(name).cli
    if driver is None:
        raise ValueError(f"runtime {name!r} is not an agent CLI")
    return driver


def is_api(name: str) -> bool:
    """Whether the runtime calls an API model through litellm (not an agent CLI)."""
    return runtime(name).cli is None
