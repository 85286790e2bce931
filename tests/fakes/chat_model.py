"""A local OpenAI-compatible chat model that reads the briefing it is sent.

    with chat_model() as (base_url, recorder):
        profiles = local_profiles(tmp_path / "profiles.toml", base_url, "alpha", "beta")

Unlike ``openai_server.fake_openai`` (a fixed script), every ``POST
…/chat/completions`` is answered with the simulated provider's contract output
for the Council briefing in its messages: claims on the thread's real node
versions in an independent round, a vote on the real proposal in a review.
With ``vote`` set, a review is answered with that vote on its proposal instead
(the simulated voter's stance depends on the request's ids, so a test that needs
an outcome states it). Profiles pointed at it (``local_profiles``: their own
``api_base``, no key needed) are *real* to Council — the runs they pin are not simulated — so a
test can work a thread with real models on a machine with no provider.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from council.agents import simulated
from council.domain.agent_output import AgentOutput, VoteOut
from tests.fakes.agent_model import Recorder, SseHandler, serving

# For profiles that are dispatched but never executed (the scheduler only records): nothing listens.
NOWHERE = "http://127.0.0.1:9/v1"
PROFILE = '[profiles.{name}]\nmodel = "openai/{name}-model"\napi_key_env = ""\napi_base = "{url}"\n'


def local_profiles(path: Path, base_url: str, *names: str) -> Path:
    """A profiles file naming each of ``names`` a real profile served at ``base_url``."""
    path.write_text("\n".join(PROFILE.format(name=n, url=base_url) for n in names))
    return path


@contextmanager
def chat_model(vote: str | None = None) -> Iterator[tuple[str, Recorder]]:
    """Serve the reading model on 127.0.0.1; yields (base_url ending in /v1, recorder)."""
    recorder = Recorder()

    class Handler(SseHandler):
        def do_POST(self) -> None:
            body = self.read_json()
            recorder.add({"method": "POST", "path": self.path, "headers": self.headers_dict(), "json": body})
            if not self.path.rstrip("/").endswith("/chat/completions") or not isinstance(body, dict):
                self.send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            model, messages = str(body.get("model") or "fake"), body.get("messages") or []
            proposal = proposal_in(messages)
            if vote is not None and proposal is not None:
                text = AgentOutput(
                    summary="[reading model] a vote.",
                    votes=[VoteOut(proposal_id=proposal, vote=vote, confidence=0.9, rationale="As stated.")],
                ).model_dump_json()
            else:
                text = simulated.respond(simulated.MODEL_PREFIX + model, messages).text
            self.send_json(200, _completion(model, text))

    with serving(Handler, "chat-model") as url:
        yield f"{url}/v1", recorder


def proposal_in(messages: list[Any]) -> str | None:
    """The id of the retraction proposal in the request's briefing, if it is a review."""
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            briefing = simulated._fenced_json(content) or {}
            found = briefing.get("proposal")
            if isinstance(found, dict) and found.get("id"):
                return str(found["id"])
    return None


def _completion(model: str, text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-reading",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }
