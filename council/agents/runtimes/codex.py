"""The Codex CLI as a runtime: ``codex exec``, sandboxed (docs/guide/agent-runtimes.md,
docs/operations/security.md).

    codex exec --skip-git-repo-check --sandbox MODE --ephemeral --disable plugins
        -c analytics.enabled=false -c model=M [-c model_provider=council
        -c model_providers.council={base_url=…, wire_api="responses", env_key=VAR, …}]
        --output-schema SCHEMA -o LAST --json PROMPT  < /dev/null

A profile with an ``api_base`` (or a key variable) gets its own provider
block: local models served by any Responses-API server work the same way.
Without either the CLI uses its own login, copied from ``~/.codex/auth.json``
into the fresh ``CODEX_HOME``. The final message is read from ``-o``; the
JSONL events (``--json``) are the trace. MODE is ``danger-full-access`` inside
Council's Landlock sandbox (``sandbox.py``; Codex's own cannot nest in it) and
Codex's ``read-only`` when that is off (``COUNCIL_AGENT_SANDBOX=off``). Codex has no turn limit of its own:
the watch counts its tool steps and stops it at ``max_turns``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from council.agents.runtimes.trace import Trace, follow, json_lines
from council.agents.runtimes.workdir import Attempt, copy_login
from council.settings import settings

PROVIDER = "council"
DEFAULT_BASE = "https://api.openai.com/v1"
# Codex's own read-only sandbox (bubblewrap, which mounts) cannot run inside Council's
# Landlock sandbox (no mounts under Landlock): there Codex runs with its own switched off,
# and the request says so.
SETTINGS_BY_SANDBOX = {
    "landlock": {
        "sandbox": "danger-full-access",
        "council_sandbox": "landlock",
        "allowed_tools": ["exec_command (Council's Landlock sandbox; Codex's own sandbox off)"],
        "approval": "never",
    },
    "off": {
        "sandbox": "read-only",
        "council_sandbox": "off",
        "allowed_tools": ["exec_command (Codex's read-only sandbox)"],
        "approval": "never",
    },
}


def command(
    executable: Path,
    model: str,
    settings: Mapping[str, Any],
    api_base: str | None,
    key_env: str,
    prompt: str,
    attempt: Attempt,
) -> list[str]:
    schema = attempt.out / "schema.json"
    schema.write_text(json.dumps(settings["output_schema"]), encoding="utf-8")
    argv = [
        str(executable),
        "exec",
        "--skip-git-repo-check",
        "--sandbox",
        str(settings["sandbox"]),
        "--ephemeral",
        "--disable",
        "plugins",
        "-c",
        "analytics.enabled=false",
        "-c",
        f"model={_toml(model)}",
    ]
    if api_base or key_env:
        fields = {
            "name": PROVIDER,
            "base_url": api_base or DEFAULT_BASE,
            "wire_api": "responses",
            "request_max_retries": 0,
            "stream_max_retries": 0,
        }
        if key_env:
            fields["env_key"] = key_env
        block = "{" + ",".join(f"{k}={_toml(v)}" for k, v in fields.items()) + "}"
        argv += ["-c", f"model_provider={PROVIDER}", "-c", f"model_providers.{PROVIDER}={block}"]
    for key, value in sorted(dict(settings.get("params") or {}).items()):
        argv += ["-c", f"{key}={_toml(value)}"]
    return [*argv, "--output-schema", str(schema), "-o", str(attempt.out / "last.txt"), "--json", prompt]


def environment(attempt: Attempt, key_env: str, login: bool) -> dict[str, str]:
    codex_home = attempt.home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    if login:
        source = (settings().codex_home or Path.home() / ".codex") / "auth.json"
        copy_login(source, codex_home / "auth.json")
    return {"HOME": str(attempt.home), "CODEX_HOME": str(codex_home)}


def turn_watch(stdout: Path, max_turns: int | None) -> Callable[[], str | None] | None:
    """Stop the CLI once it starts as many tool steps as ``max_turns`` allows (one turn answers)."""
    if max_turns is None:
        return None
    steps = 0

    def judge(event: dict[str, Any]) -> str | None:
        nonlocal steps
        item = event.get("item")
        if event.get("type") == "item.started" and isinstance(item, dict):
            steps += item.get("type") == "command_execution"
        return "turn limit" if steps >= max_turns else None

    return follow(stdout, judge)


def read(stdout: str, attempt: Attempt, trace: Trace) -> str | None:
    """Fill ``trace`` from the JSONL events; the final message (``-o``), or None."""
    events = json_lines(stdout)
    trace.events, trace.event_count = events, len(events)
    for event in events:
        kind = event.get("type")
        item = event.get("item") if isinstance(event.get("item"), dict) else {}
        if kind == "turn.completed":
            trace.turns += 1
            trace.add_usage(event.get("usage") or {})
        elif kind in ("turn.failed", "error"):
            trace.errors.append(_message(event))
        elif kind == "item.completed" and item.get("type") == "command_execution":
            command = str(item.get("command", ""))
            trace.commands.append(command)
            trace.files_read.append(command)
            trace.tool_calls.append(
                {"tool": "exec_command", "command": command, "exit_code": item.get("exit_code")}
            )
        elif kind == "item.completed" and item.get("type") == "error":
            trace.errors.append(str(item.get("message", "")))
    last = attempt.out / "last.txt"
    try:
        text = last.read_text(encoding="utf-8")
    except OSError:
        return None
    return text if text.strip() else None


def _message(event: Mapping[str, Any]) -> str:
    error = event.get("error")
    if isinstance(error, Mapping):
        return str(error.get("message", error))
    return str(event.get("message", error or event))


def _toml(value: Any) -> str:
    """A TOML literal for a ``-c`` override (JSON's strings, numbers and booleans are TOML's)."""
    return json.dumps(value)
