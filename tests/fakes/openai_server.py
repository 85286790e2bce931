"""A local OpenAI-compatible HTTP server with a scripted sequence of answers.

    with fake_openai([reply(AGENT_OUTPUT_JSON)]) as (base_url, recorder):
        gateway.complete("openai/fake-model", messages, {}, api_base=base_url, api_key_env="FAKE_KEY")
        assert recorder.requests[0]["headers"]["authorization"] == "Bearer " + os.environ["FAKE_KEY"]

It serves ``POST …/chat/completions`` (litellm's openai provider posts to
``<api_base>/chat/completions``) on 127.0.0.1 with a free port. The n-th
request gets the n-th step of the script; once the script is spent its last
step repeats, so ``[server_error()]`` is "500 always". The recorder keeps every
request's headers, so tests can check which key (``Authorization``) a server
was sent. The 401 step echoes the bearer token it received, as a careless
provider might, so tests can check that no key leaks into an error message.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

AGENT_OUTPUT_JSON = json.dumps(
    {
        "summary": "[fake] one endorsement.",
        "claims": [
            {
                "node_version_id": "00000000-0000-4000-8000-000000000001",
                "type": "endorse",
                "confidence": 0.8,
                "rationale": "Fits the evidence.",
            }
        ],
    }
)


@dataclass(frozen=True)
class Step:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    echo_key: bool = False  # put the received bearer token into the error message


def reply(content: str, *, prompt_tokens: int = 11, completion_tokens: int = 7) -> Step:
    """A 200 chat completion whose message content is ``content`` (JSON or not)."""
    return Step(
        200,
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "fake-model",
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
    )


def read_evidence(*ids: str, name: str = "read_evidence") -> Step:
    """A 200 chat completion that calls the tool ``name`` once per id (``{"id": …}``)."""
    step = reply("")
    calls = [
        {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps({"id": i})},
        }
        for n, i in enumerate(ids)
    ]
    choice = {
        "index": 0,
        "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": None, "tool_calls": calls},
    }
    return Step(200, {**step.body, "choices": [choice]})


def _error(status: int, kind: str, message: str, **extra: Any) -> Step:
    return Step(status, {"error": {"message": message, "type": kind, "code": kind}}, **extra)


def rate_limited() -> Step:
    return _error(
        429, "rate_limit_exceeded", "Rate limit reached; try again shortly.", headers={"retry-after": "0"}
    )


def server_error() -> Step:
    return _error(500, "server_error", "The server had an error while processing your request.")


def client_error(status: int) -> Step:
    """Any other error status (400 bad request, 403, 404, 502, 503, …)."""
    return _error(status, f"http_{status}", f"The request failed with status {status}.")


def unauthorized() -> Step:
    return _error(401, "invalid_api_key", "Incorrect API key provided: {key}.", echo_key=True)


@dataclass
class Recorder:
    """Every request the server received, in order: path, headers (lower-cased names), json."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, request: dict[str, Any]) -> int:
        with self._lock:
            self.requests.append(request)
            return len(self.requests) - 1


@contextmanager
def fake_openai(script: Sequence[Step]) -> Iterator[tuple[str, Recorder]]:
    """Serve ``script`` on 127.0.0.1; yields (base_url ending in /v1, recorder)."""
    if not script:
        raise ValueError("the script needs at least one step")
    steps = list(script)
    recorder = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = raw.decode("utf-8", "replace")
            index = recorder.add(
                {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "json": body}
            )
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(Step(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}))
                return
            self._send(steps[min(index, len(steps) - 1)])

        def _send(self, step: Step) -> None:
            body = step.body
            if step.echo_key:
                key = self.headers.get("authorization", "").removeprefix("Bearer ").strip()
                error = dict(body["error"], message=body["error"]["message"].format(key=key))
                body = {"error": error}
            data = json.dumps(body).encode("utf-8")
            self.send_response(step.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in step.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="fake-openai", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", recorder
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
