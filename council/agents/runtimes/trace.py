"""What an agent CLI did, as stored with the attempt (docs/architecture.md §7): its event
stream, bounded, and what was read out of it — tool calls, commands run, files
read, turns, token usage, exit status, the CLI's version.

Which evidence a run *opened* is taken from its tool calls and commands only,
never from ids that merely appear in the prompt (the prompt names every
evidence item of the briefing).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from council.agents.runtimes.workdir import EvidenceFile

MAX_EVENTS = 300
MAX_STRING = 1500
_EVIDENCE_PATH = re.compile(r"evidence/([0-9a-f]{64})\.txt")


@dataclass
class Trace:
    runtime: str
    cli_version: str
    call: int  # 1, or 2 for the re-prompt
    exit_status: int | None = None
    stopped: str | None = None  # deadline | turn limit | authentication refused
    duration_ms: int = 0
    turns: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)
    event_count: int = 0
    stderr_tail: str = ""
    sandbox: str = ""  # what confined the CLI (confinement.wrap), or that nothing did

    def document(self) -> dict[str, Any]:
        """The stored form (bounded: at most MAX_EVENTS events, long strings cut)."""
        return {
            "runtime": self.runtime,
            "cli_version": self.cli_version,
            "call": self.call,
            "exit_status": self.exit_status,
            "stopped": self.stopped,
            "duration_ms": self.duration_ms,
            "turns": self.turns,
            "usage": self.usage,
            "tool_calls": [bounded(c) for c in self.tool_calls[:MAX_EVENTS]],
            "commands": [cut(c) for c in self.commands[:MAX_EVENTS]],
            "files_read": self.files_read[:MAX_EVENTS],
            "errors": [cut(e) for e in self.errors[:20]],
            "events": [bounded(e) for e in self.events[:MAX_EVENTS]],
            "event_count": self.event_count,
            "truncated": self.event_count > MAX_EVENTS,
            "stderr_tail": self.stderr_tail,
            "sandbox": self.sandbox,
        }

    def add_usage(self, counts: Mapping[str, Any]) -> None:
        for key, value in counts.items():
            if isinstance(value, int) and not isinstance(value, bool):
                self.usage[key] = self.usage.get(key, 0) + value


def json_lines(text: str) -> list[Any]:
    """Each line of a JSONL stream that parses (others are the CLI's chatter, skipped)."""
    events: list[Any] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
    return events


def follow(path: Path, judge: Callable[[dict[str, Any]], str | None]) -> Callable[[], str | None]:
    """A watch over a JSONL file the CLI is writing: each new complete event goes to
    ``judge``; the first reason it gives stops the CLI."""
    offset = 0

    def watch() -> str | None:
        nonlocal offset
        try:
            with path.open("rb") as f:
                f.seek(offset)
                chunk = f.read()
        except OSError:
            return None
        complete = chunk.rfind(b"\n") + 1
        offset += complete
        for event in json_lines(chunk[:complete].decode("utf-8", "replace")):
            reason = judge(event) if isinstance(event, dict) else None
            if reason is not None:
                return reason
        return None

    return watch


def opened(paths: Iterable[str], files: Sequence[EvidenceFile]) -> list[EvidenceFile]:
    """The evidence files named by what the CLI read (paths or command lines), each once, in order."""
    by_sha = {f.sha256: f for f in files}
    seen: dict[str, EvidenceFile] = {}
    for path in paths:
        for sha in _EVIDENCE_PATH.findall(path):
            if sha in by_sha and sha not in seen:
                seen[sha] = by_sha[sha]
    return list(seen.values())


def cut(text: str, limit: int = MAX_STRING) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def bounded(value: object, depth: int = 0) -> object:
    if isinstance(value, str):
        return cut(value)
    if depth > 8:
        return "…"
    if isinstance(value, Mapping):
        return {str(k): bounded(v, depth + 1) for k, v in list(value.items())[:60]}
    if isinstance(value, list):
        return [bounded(v, depth + 1) for v in value[:60]]
    return value
