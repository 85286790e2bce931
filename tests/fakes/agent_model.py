"""What the fake agent-CLI model servers answer (``responses_server``, ``anthropic_server``).

A fake server is given a *behaviour* and decides, for each request, one of:
``answer`` (contract output for the briefing in the prompt, made by the
simulated provider, so it names real node versions and evidence), ``read``
(first ask the agent to read an evidence file with its own tool; answer once
the tool's result is back), ``unauthorized`` (401), ``silent`` (accept the
request and never answer), ``invalid`` (a non-JSON answer, every time),
``invalid_once`` (non-JSON until the prompt carries Council's re-prompt),
``hostile`` (run each of the server's
``commands`` — a shell line for the Codex CLI, a path to ``Read`` for Claude
Code — then answer citing everything they printed: :func:`hostile_answer`),
``unknown_ids`` (schema-valid JSON claiming on a node version that does not
exist: the CLI cannot tell, Council's own validation must), ``tools_forever``
(a tool call every turn, for the turn limit) and ``careless`` (answers citing
evidence without opening it). Every other answer opens each evidence file it
cites first, one tool call a turn.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from council.agents import simulated

BEHAVIOURS = (
    "answer",
    "read",
    "unauthorized",
    "silent",
    "invalid",
    "invalid_once",
    "unknown_ids",
    "tools_forever",
    "hostile",
    "careless",
)
LOOT = "HOSTILE-LOOT"  # marks what a hostile model cites, to find it where it was stored
UNKNOWN_VERSION = "00000000-0000-4000-8000-00000000dead"


@dataclass
class Recorder:
    """Every request a fake server received: method, path, lower-cased headers, JSON body."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, request: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(request)

    def model_calls(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] == "POST"]


def answer_for(prompt: str, agent_hint: str = "fake") -> str:
    """Contract output for the briefing in ``prompt`` (deterministic)."""
    reply = simulated.respond(simulated.MODEL_PREFIX + agent_hint, [{"role": "user", "content": prompt}])
    return reply.text


def unknown_ids_answer() -> str:
    return json.dumps(
        {
            "summary": "[fake] a claim on a version that does not exist.",
            "claims": [
                {"node_version_id": UNKNOWN_VERSION, "type": "endorse", "confidence": 0.6, "rationale": "x"}
            ],
        }
    )


def hostile_answer(prompt: str, found: list[str]) -> str:
    """Contract output for the briefing that cites everything the model's tools printed: in the
    summary, in every claim's rationale and as new evidence on the first claim."""
    output = json.loads(answer_for(prompt))
    loot = f"{LOOT}\n" + "\n----\n".join(found)
    output["summary"] = loot[:3900]
    for part in ("new_nodes", "new_versions"):  # it cites only what it found, never the briefing's files
        for item in output.get(part) or []:
            item["cites"] = []
    for n, claim in enumerate(output.get("claims") or []):
        claim["rationale"] = loot[:3900]
        cite = {"new_evidence": {"title": "What I found", "content": loot[:19000]}, "role": "context"}
        claim["cites"] = [cite] if n == 0 else []
    return json.dumps(output)


def first_evidence_file(prompt: str) -> str | None:
    """The file of the briefing's first evidence item (named by its hash, as in the index)."""
    found = simulated._fenced_json(prompt) or {}
    packet = found.get("packet") if isinstance(found.get("packet"), dict) else {}
    evidence = [e for e in packet.get("evidence") or [] if isinstance(e, dict) and e.get("sha256")]
    return f"evidence/{evidence[0]['sha256']}.txt" if evidence else None


def cited_files(prompt: str, text: str) -> list[str]:
    """The evidence files (``evidence/<sha256>.txt``) of the briefing's evidence that the
    answer ``text`` cites, each once, in order."""
    found = simulated._fenced_json(prompt) or {}
    packet = found.get("packet") if isinstance(found.get("packet"), dict) else {}
    files = {
        str(e["id"]): f"evidence/{e['sha256']}.txt"
        for e in packet.get("evidence") or []
        if isinstance(e, dict) and e.get("id") and e.get("sha256")
    }
    try:
        output = json.loads(text)
    except ValueError:
        return []
    cited: list[str] = []
    for part in ("claims", "new_nodes", "new_versions"):
        for item in output.get(part) or []:
            for cite in item.get("cites") or [] if isinstance(item, dict) else []:
                named = cite.get("evidence_id") if isinstance(cite, dict) else None
                if not named:
                    continue
                for evidence_id, file in files.items():
                    if (evidence_id == named or evidence_id.startswith(str(named))) and file not in cited:
                        cited.append(file)
    return cited


def decide(
    behaviour: str, prompt: str, *, tool_result_seen: bool, reads_done: int | None = None
) -> tuple[str, str]:
    """(what to do, its text): ``("tool", file)``, ``("answer", json text)``,
    ``("text", non-JSON)``, ``("401", "")`` or ``("silent", "")``. A model that answers
    reads every evidence file its answer cites first, one tool call a turn (``reads_done``:
    the tool results its conversation holds), as Council requires of every runtime; the
    ``read`` behaviour reads the first evidence file besides."""
    done = reads_done if reads_done is not None else int(tool_result_seen)
    if behaviour == "unauthorized":
        return "401", ""
    if behaviour == "silent":
        return "silent", ""
    if behaviour == "tools_forever":
        return "tool", first_evidence_file(prompt) or "evidence/index.json"
    if behaviour == "invalid" or (behaviour == "invalid_once" and simulated.REPROMPT_PREFIX not in prompt):
        return "text", "I think the propositions look fine overall."
    if behaviour == "unknown_ids":
        return "answer", unknown_ids_answer()
    text = answer_for(prompt)
    if behaviour == "careless":  # cites what its answer cites without opening any of it
        return "answer", text
    first = first_evidence_file(prompt) if behaviour == "read" else None
    to_read = [first] if first else []
    to_read += [f for f in cited_files(prompt, text) if f not in to_read]
    if done < len(to_read):
        return "tool", to_read[done]
    return "answer", text


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], name: str) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 at a free port; yields ``http://127.0.0.1:PORT``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    stop = threading.Event()
    server.stop_event = stop  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


class SseHandler(BaseHTTPRequestHandler):
    """Shared plumbing: read a JSON body, write SSE events, stay silent forever."""

    protocol_version = "HTTP/1.1"

    def read_json(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"null")
        except ValueError:
            return raw.decode("utf-8", "replace")

    def headers_dict(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_events(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        body = "".join(f"event: {kind}\ndata: {json.dumps(data)}\n\n" for kind, data in events).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def hold_silent(self) -> None:
        self.server.stop_event.wait(600)  # type: ignore[attr-defined]
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass
