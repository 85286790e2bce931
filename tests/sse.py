"""Reading a server-sent event stream in tests (the live stream, council/web/routes_stream.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

Messages = list[dict[str, Any]]


def read_messages(lines: Iterator[str], until: Callable[[Messages], bool], timeout: float = 10) -> Messages:
    """Parse server-sent events until ``until(messages)`` holds; comments are kept as such."""
    messages: Messages = []
    current: dict[str, Any] = {}
    deadline = time.monotonic() + timeout
    for line in lines:
        assert time.monotonic() < deadline, f"stream did not deliver in time: {messages}"
        if line.startswith(":"):
            messages.append({"comment": line[1:].strip()})
        elif line.startswith("id: "):
            current["id"] = int(line[4:])
        elif line.startswith("data: "):
            current["data"] = json.loads(line[6:])
        elif line == "" and current:
            messages.append(current)
            current = {}
        if until(messages):
            return messages
    raise AssertionError(f"stream ended: {messages}")
