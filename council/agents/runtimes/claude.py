"""Claude Code as a runtime: ``claude -p`` with read tools only (docs/guide/agent-runtimes.md).

    claude -p --output-format stream-json --verbose --model M --max-turns N
        --permission-mode dontAsk --strict-mcp-config --no-session-persistence
        --tools Read --allowedTools Read --json-schema SCHEMA PROMPT  < /dev/null

``HOME`` and ``CLAUDE_CONFIG_DIR`` are fresh per attempt. ``ANTHROPIC_BASE_URL``
is the attempt's provider proxy for the profile's ``api_base`` (GLM through
Z.ai's Anthropic-compatible endpoint, or any such server) and
``ANTHROPIC_API_KEY`` a dummy: the proxy adds the real key; with neither, the CLI's login is copied from
``~/.claude/.credentials.json``. The schema handed to ``--json-schema`` has no
``"$schema"`` key (Claude Code 2.1.197 drops structured output when it has
one). The answer is the final event's ``structured_output``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from council.agents.runtimes.trace import Trace, follow, json_lines
from council.agents.runtimes.workdir import Attempt, copy_login
from council.domain.requests import SandboxRow
from council.settings import settings

NO_KEY = "council-no-key"  # a profile's own api_base with no key variable: a placeholder, as for litellm
QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
TOOLS = ("Read",)
SETTINGS_BY_SANDBOX: dict[str, SandboxRow] = {
    "landlock": {
        "sandbox": "read tools only, permission mode dontAsk",
        "council_sandbox": "landlock",
        "allowed_tools": list(TOOLS),
    },
    "off": {
        "sandbox": "read tools only, permission mode dontAsk",
        "council_sandbox": "off",
        "allowed_tools": list(TOOLS),
    },
}


def command(executable: Path, model: str, settings: Mapping[str, object], prompt: str) -> list[str]:
    argv = [
        str(executable),
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        model,
        "--permission-mode",
        "dontAsk",
        "--strict-mcp-config",
        "--no-session-persistence",
        "--tools",
        ",".join(TOOLS),
        "--allowedTools",
        ",".join(TOOLS),
        "--json-schema",
        json.dumps(settings["output_schema"]),
    ]
    if settings.get("max_turns") is not None:
        argv += ["--max-turns", str(settings["max_turns"])]
    return [*argv, prompt]


def environment(attempt: Attempt, api_base: str | None, key: str | None, login: bool) -> dict[str, str]:
    config = attempt.home / ".claude"
    config.mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(attempt.home), "CLAUDE_CONFIG_DIR": str(config), **QUIET}
    if api_base:
        env["ANTHROPIC_BASE_URL"] = api_base
    if key:
        env["ANTHROPIC_API_KEY"] = key
    elif api_base:
        env["ANTHROPIC_API_KEY"] = NO_KEY
    if login:
        source = (settings().claude_config_dir or Path.home() / ".claude") / ".credentials.json"
        copy_login(source, config / ".credentials.json")
    return env


def auth_watch(stdout: Path) -> Callable[[], str | None]:
    """Stop the CLI at its first retry of a refused key: Claude Code retries a 401 ten
    times with backoff, minutes of a run that cannot succeed."""

    def judge(event: dict[str, object]) -> str | None:
        retry = event.get("type") == "system" and event.get("subtype") == "api_retry"
        return "authentication refused" if retry and event.get("error_status") in (401, 403) else None

    return follow(stdout, judge)


def read(stdout: str, trace: Trace) -> tuple[str | None, str | None]:
    """Fill ``trace`` from the stream-JSON events: (the structured output as JSON text, or
    None; the final result's error subtype, or None)."""
    events = json_lines(stdout)
    trace.events, trace.event_count = events, len(events)
    answer: str | None = None
    failure: str | None = None
    for event in events:
        kind = event.get("type")
        if kind == "assistant":
            for block in (event.get("message") or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    _tool_use(block, trace)
        elif kind == "system" and event.get("subtype") == "api_retry":
            trace.errors.append(
                f"api retry {event.get('attempt')}: HTTP {event.get('error_status')} {event.get('error', '')}"
            )
        elif kind == "result":
            trace.turns = int(event.get("num_turns") or 0)
            trace.add_usage(
                {
                    k: v
                    for k, v in (event.get("usage") or {}).items()
                    if k in ("input_tokens", "output_tokens")
                }
            )
            structured = event.get("structured_output")
            if structured is not None:
                answer = json.dumps(structured)
            elif isinstance(event.get("result"), str) and event["result"].strip():
                answer = event["result"]
            if event.get("is_error") or str(event.get("subtype", "")).startswith("error"):
                failure = str(event.get("subtype") or "error")
                status = event.get("api_error_status")
                detail = event.get("result") if isinstance(event.get("result"), str) else ""
                trace.errors.append(f"{failure}" + (f" (HTTP {status})" if status else "") + f": {detail}")
            for denial in event.get("permission_denials") or []:
                trace.errors.append(f"permission denied: {json.dumps(denial)[:300]}")
    return answer, failure


def _tool_use(block: Mapping[str, object], trace: Trace) -> None:
    name = str(block.get("name"))
    given = block.get("input")
    args: Mapping[str, object] = given if isinstance(given, Mapping) else {}
    if name == "StructuredOutput":
        trace.tool_calls.append({"tool": name})
        return
    trace.tool_calls.append({"tool": name, "input": args})
    path = args.get("file_path") or args.get("path")
    if isinstance(path, str):
        trace.files_read.append(path)
