"""A local OpenAI Responses API (``POST /v1/responses``, SSE) for the Codex CLI.

    with fake_responses("read") as (base_url, recorder):   # base_url ends in /v1
        ...  # codex exec with model_providers.fake.base_url = base_url

The Codex CLI streams every call (``stream: true``). ``read`` answers the first
call with an ``exec_command`` function call (``cat evidence/<sha>.txt``), which
the CLI runs in its sandbox and sends back as a ``function_call_output``; the
next call gets the contract answer. See ``tests.fakes.agent_model`` for the
other behaviours.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.fakes.agent_model import BEHAVIOURS, Recorder, SseHandler, decide, hostile_answer, serving


def tool_outputs(body: Any) -> list[str]:
    """The text of each ``function_call_output`` the request carries, in order."""
    items = body.get("input") if isinstance(body, dict) else None
    listed = items if isinstance(items, list) else []
    return [
        str(item.get("output"))
        for item in listed
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def prompt_of(body: Any) -> tuple[str, bool]:
    """(the user text of the request, whether a tool's output is in it)."""
    items = body.get("input") if isinstance(body, dict) else None
    texts: list[str] = []
    tool_result = False
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call_output":
            tool_result = True
        if item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts += [str(p.get("text", "")) for p in content if isinstance(p, dict)]
    return "\n".join(texts), tool_result


def _usage() -> dict[str, Any]:
    return {
        "input_tokens": 120,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 40,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 160,
    }


def _events(n: int, item: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    rid = f"resp_fake_{n}"
    return [
        (
            "response.created",
            {"type": "response.created", "response": {"id": rid, "status": "in_progress", "output": []}},
        ),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        (
            "response.completed",
            {
                "type": "response.completed",
                "response": {"id": rid, "status": "completed", "output": [item], "usage": _usage()},
            },
        ),
    ]


@contextmanager
def fake_responses(
    behaviour: str = "answer", *, delay_s: float = 0.0, commands: list[str] | None = None
) -> Iterator[tuple[str, Recorder]]:
    """Serve the Responses API on 127.0.0.1; yields (base URL ending in /v1, recorder).
    ``hostile`` runs each of ``commands`` (read when the call comes: the list may be filled late)."""
    if behaviour not in BEHAVIOURS:
        raise ValueError(f"unknown behaviour {behaviour!r}")
    recorder = Recorder()
    counter = iter(range(1, 1_000_000))

    class Handler(SseHandler):
        def do_POST(self) -> None:
            body = self.read_json()
            recorder.add({"method": "POST", "path": self.path, "headers": self.headers_dict(), "json": body})
            if not self.path.rstrip("/").endswith("/responses"):
                self.send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            prompt, tool_result = prompt_of(body)
            action, text = decide(
                behaviour, prompt, tool_result_seen=tool_result, reads_done=len(tool_outputs(body))
            )
            if behaviour == "hostile":
                done = tool_outputs(body)
                todo = list(commands or [])
                action, text = ("tool", todo[len(done)]) if len(done) < len(todo) else ("answer", "")
                text = text if action == "tool" else hostile_answer(prompt, done)
            n = next(counter)
            if delay_s:  # a slow model: the CLI is mid-run for this long
                self.server.stop_event.wait(delay_s)  # type: ignore[attr-defined]
            if action == "401":
                self.send_json(
                    401,
                    {
                        "error": {
                            "message": "Incorrect API key provided.",
                            "type": "invalid_request_error",
                            "code": "invalid_api_key",
                        }
                    },
                )
            elif action == "silent":
                self.hold_silent()
            elif action == "tool":
                call = {
                    "type": "function_call",
                    "id": f"fc_{n}",
                    "call_id": f"call_{n}",
                    "status": "completed",
                    "name": "exec_command",
                    "arguments": json.dumps({"cmd": text if behaviour == "hostile" else f"cat {text}"}),
                }
                self.send_events(_events(n, call))
            else:
                message = {
                    "type": "message",
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
                self.send_events(_events(n, message))

    with serving(Handler, "fake-responses") as url:
        yield url + "/v1", recorder
