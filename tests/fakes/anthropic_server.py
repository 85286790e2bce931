"""A local Anthropic Messages API (``HEAD /``, ``POST /v1/messages``, SSE) for Claude Code.

    with fake_anthropic("read") as (base_url, recorder):   # ANTHROPIC_BASE_URL=base_url
        ...  # claude -p … --json-schema SCHEMA

Claude Code checks connectivity with ``HEAD /`` (200 here), then streams every
call. With ``--json-schema`` it offers a ``StructuredOutput`` tool whose input
schema is the contract: the answer is a ``tool_use`` of it (and, once its
result is back, a short closing text). ``read`` first asks for a ``Read`` of an
evidence file. A call that offers no ``StructuredOutput`` tool (Claude Code's
own housekeeping) gets a plain text reply. See ``tests.fakes.agent_model``
for the other behaviours.

    with fake_anthropic(script=next_step) as (base_url, recorder):
        ...  # claude -p … --mcp-config …

With a *script* every call is answered by ``next_step(turn)``: the
:class:`Turn` holds the tools the call offers and each tool call so far with
the result the CLI sent back, so a step's input may depend on an earlier
result (the run id an MCP tool returned); the step is a ``tool_use``
(:func:`use`) or a closing text (:func:`say`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tests.fakes.agent_model import BEHAVIOURS, Recorder, SseHandler, decide, hostile_answer, serving

STRUCTURED = "StructuredOutput"


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model made and the result the CLI sent back for it."""

    name: str
    input: dict[str, Any]
    result: str  # the tool_result's text
    is_error: bool

    def document(self) -> Any:
        """The result as JSON (an MCP tool's answer is one JSON document here)."""
        return json.loads(self.result)


@dataclass(frozen=True)
class Turn:
    """What one call to the model carries: the tools offered and the tool calls so far."""

    offered: tuple[str, ...]
    calls: tuple[ToolCall, ...]
    prompt: str = ""  # the user's text

    @classmethod
    def of(cls, body: Any) -> Turn:
        tools = body.get("tools") if isinstance(body, dict) else None
        messages = body.get("messages") if isinstance(body, dict) else None
        offered = tuple(str(t.get("name")) for t in tools or [] if isinstance(t, dict))
        uses: dict[str, dict[str, Any]] = {}
        calls: list[ToolCall] = []
        for message in messages if isinstance(messages, list) else []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use":
                    uses[str(block.get("id"))] = block
                elif block.get("type") == "tool_result" and str(block.get("tool_use_id")) in uses:
                    used = uses[str(block.get("tool_use_id"))]
                    given = used.get("input")
                    calls.append(
                        ToolCall(
                            str(used.get("name")),
                            given if isinstance(given, dict) else {},
                            _text(block.get("content")),
                            bool(block.get("is_error")),
                        )
                    )
        return cls(offered, tuple(calls), conversation(body)[0])

    def tool(self, name: str) -> str | None:
        """The offered tool that is ``name`` or an MCP server's ``mcp__<server>__name``."""
        return next((o for o in self.offered if o == name or o.endswith(f"__{name}")), None)


Script = Callable[[Turn], dict[str, Any]]


def use(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A scripted step: call tool ``name`` with ``arguments``."""
    return {"type": "tool_use", "name": name, "input": arguments}


def say(text: str) -> dict[str, Any]:
    """A scripted step: answer ``text`` and end the turn."""
    return {"type": "text", "text": text}


def hostile(paths: list[str]) -> Script:
    """A script that ``Read``s each of ``paths`` (absolute, read when the call comes: the list
    may be filled late), then answers citing all they held (``agent_model.hostile_answer``)."""

    def step(turn: Turn) -> dict[str, Any]:
        if turn.tool(STRUCTURED) is None or any(c.name == STRUCTURED for c in turn.calls):
            return say("Done.")
        done = [c for c in turn.calls if c.name == "Read"]
        if len(done) < len(paths):
            return use("Read", {"file_path": paths[len(done)]})
        return use(
            STRUCTURED, json.loads(hostile_answer(turn.prompt, [f"{c.input}: {c.result}" for c in done]))
        )

    return step


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text")


def conversation(body: Any) -> tuple[str, int, bool, bool]:
    """(the user text, how many tool results other than StructuredOutput's came back,
    StructuredOutput was answered, it is offered)."""
    messages = body.get("messages") if isinstance(body, dict) else None
    tools = body.get("tools") if isinstance(body, dict) else None
    offered = any(isinstance(t, dict) and t.get("name") == STRUCTURED for t in tools or [])
    texts: list[str] = []
    names: dict[str, str] = {}
    read_back = 0
    structured_back = False
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                names[str(block.get("id"))] = str(block.get("name"))
            elif block.get("type") == "tool_result":
                name = names.get(str(block.get("tool_use_id")), "")
                structured_back |= name == STRUCTURED and not block.get("is_error")
                read_back += name != STRUCTURED
            elif block.get("type") == "text" and message.get("role") == "user":
                texts.append(str(block.get("text", "")))
    return "\n".join(texts), read_back, structured_back, offered


def _message(n: int, model: str, block: dict[str, Any], stop: str) -> list[tuple[str, dict[str, Any]]]:
    start = dict(block, input={}) if block["type"] == "tool_use" else dict(block, text="")
    if block["type"] == "tool_use":
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        delta = {"type": "text_delta", "text": block["text"]}
    return [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_fake_{n}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 120, "output_tokens": 1},
                },
            },
        ),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 40},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


@contextmanager
def fake_anthropic(
    behaviour: str = "answer", *, delay_s: float = 0.0, script: Script | None = None
) -> Iterator[tuple[str, Recorder]]:
    """Serve the Messages API on 127.0.0.1; yields (base URL, recorder). A script
    answers every call instead of the behaviour."""
    if behaviour not in BEHAVIOURS:
        raise ValueError(f"unknown behaviour {behaviour!r}")
    recorder = Recorder()
    counter = iter(range(1, 1_000_000))

    class Handler(SseHandler):
        def do_HEAD(self) -> None:
            recorder.add({"method": "HEAD", "path": self.path, "headers": self.headers_dict(), "json": None})
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            body = self.read_json()
            recorder.add({"method": "POST", "path": self.path, "headers": self.headers_dict(), "json": body})
            if not self.path.split("?")[0].rstrip("/").endswith("/v1/messages"):
                self.send_json(
                    404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}}
                )
                return
            model = str(body.get("model", "fake")) if isinstance(body, dict) else "fake"
            n = next(counter)
            if script is not None:
                try:
                    step = script(Turn.of(body))
                except Exception as exc:  # the CLI ends its turn saying why, and the test reads it
                    step = say(f"the fake model's script failed: {exc!r}")
                if step["type"] == "tool_use":
                    self.send_events(_message(n, model, dict(step, id=f"toolu_script_{n}"), "tool_use"))
                else:
                    self.send_events(_message(n, model, step, "end_turn"))
                return
            prompt, read_back, structured_back, offered = conversation(body)
            if delay_s:  # a slow model: the CLI is mid-run for this long
                self.server.stop_event.wait(delay_s)  # type: ignore[attr-defined]
            if not offered or structured_back:
                self.send_events(_message(n, model, {"type": "text", "text": "Done."}, "end_turn"))
                return
            action, text = decide(behaviour, prompt, tool_result_seen=read_back > 0, reads_done=read_back)
            if action == "401":
                self.send_json(
                    401,
                    {
                        "type": "error",
                        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
                    },
                )
            elif action == "silent":
                self.hold_silent()
            elif action == "tool":
                use = {
                    "type": "tool_use",
                    "id": f"toolu_read_{n}",
                    "name": "Read",
                    "input": {"file_path": text},
                }
                self.send_events(_message(n, model, use, "tool_use"))
            elif action == "text":
                self.send_events(_message(n, model, {"type": "text", "text": text}, "end_turn"))
            else:
                use = {
                    "type": "tool_use",
                    "id": f"toolu_out_{n}",
                    "name": STRUCTURED,
                    "input": json.loads(text),
                }
                self.send_events(_message(n, model, use, "tool_use"))

    with serving(Handler, "fake-anthropic") as url:
        yield url, recorder
