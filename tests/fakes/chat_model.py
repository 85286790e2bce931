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

Offered the ``read_evidence`` tool, it reads the evidence left out of its briefing with
``tool_calls`` first, as the simulated provider does, and cites what it read. With
``cites_unread=True`` it is a careless model instead: it never calls the tool and cites the
first item it was not given, every time.

With ``mind`` set (``tests.fakes.minded_model.Mind``), it is a model that thinks for itself
instead: it holds a verdict with a confidence, words its own proposition in its own style,
and judges what it is shown by reading it.

``messages_model()`` is the same reading model behind the Anthropic Messages API as
litellm's ``anthropic/`` provider calls it (``POST /v1/messages``, not streamed): tool
calls are ``tool_use`` blocks and come back as ``tool_result`` blocks.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from council.agents import simulated
from council.agents.sim_reads import read_id
from council.domain.agent_output import AgentOutput, VoteOut
from tests.fakes import minded_model
from tests.fakes.agent_model import Recorder, SseHandler, serving
from tests.fakes.minded_model import Mind

# For profiles that are dispatched but never executed (the scheduler only records): nothing listens.
NOWHERE = "http://127.0.0.1:9/v1"
PROFILE = '[profiles.{name}]\nmodel = "openai/{name}-model"\napi_key_env = ""\napi_base = "{url}"\n'


def local_profiles(path: Path, base_url: str, *names: str) -> Path:
    """A profiles file naming each of ``names`` a real profile served at ``base_url``."""
    path.write_text("\n".join(PROFILE.format(name=n, url=base_url) for n in names))
    return path


@contextmanager
def chat_model(
    vote: str | None = None,
    *,
    cites_unread: bool = False,
    endorse: bool = False,
    latency_s: float = 0.0,
    mind: Mind | None = None,
    counted: bool = False,
) -> Iterator[tuple[str, Recorder]]:
    """Serve the reading model on 127.0.0.1; yields (base_url ending in /v1, recorder).
    ``latency_s``: each answer waits that long first (a model's latency, spent sleeping).
    ``mind``: a model that thinks for itself instead (``tests.fakes.minded_model``).
    ``counted``: each answer reports the tokens a provider would bill, counted by tiktoken
    (the request's messages and tools, the answer's text), instead of a fixed 11 and 7."""
    recorder = Recorder()

    class Handler(SseHandler):
        def do_POST(self) -> None:
            body = self.read_json()
            recorder.add({"method": "POST", "path": self.path, "headers": self.headers_dict(), "json": body})
            if not self.path.rstrip("/").endswith("/chat/completions") or not isinstance(body, dict):
                self.send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            if latency_s > 0:
                time.sleep(latency_s)
            model, messages = str(body.get("model") or "fake"), body.get("messages") or []
            proposal = proposal_in(messages)
            if mind is not None:
                reads = minded_model.unread(messages, bool(body.get("tools")))
                if reads:
                    done = _tool_round(model, tuple(reads))
                    if counted:
                        done["usage"] = _counted(model, body, json.dumps(done["choices"][0]["message"]))
                    self.send_json(200, done)
                    return
                text = minded_model.answer(mind, model, messages)
            elif vote is not None and proposal is not None:
                text = AgentOutput(
                    summary="[reading model] a vote.",
                    votes=[VoteOut(proposal_id=proposal, vote=vote, confidence=0.9, rationale="As stated.")],
                ).model_dump_json()
            else:
                reply = simulated.respond(
                    simulated.MODEL_PREFIX + model,
                    messages,
                    tools_offered=bool(body.get("tools")) and not cites_unread,
                )
                if reply.reads:
                    done = _tool_round(model, reply.reads)
                    if counted:
                        done["usage"] = _counted(model, body, json.dumps(done["choices"][0]["message"]))
                    self.send_json(200, done)
                    return
                text = _final(model, reply.text, messages, cites_unread=cites_unread, endorse=endorse)
            answered = _completion(model, text)
            if counted:
                answered["usage"] = _counted(model, body, text)
            self.send_json(200, answered)

    with serving(Handler, "chat-model") as url:
        yield f"{url}/v1", recorder


@contextmanager
def messages_model(
    *, cites_unread: bool = False, endorse: bool = False, mind: Mind | None = None
) -> Iterator[tuple[str, Recorder]]:
    """The reading model behind the Anthropic Messages API; yields (base_url, recorder).
    ``mind``: a model that thinks for itself instead (``tests.fakes.minded_model``)."""
    recorder = Recorder()

    class Handler(SseHandler):
        def do_POST(self) -> None:
            body = self.read_json()
            recorder.add({"method": "POST", "path": self.path, "headers": self.headers_dict(), "json": body})
            if not self.path.split("?")[0].rstrip("/").endswith("/v1/messages") or not isinstance(body, dict):
                self.send_json(
                    404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}}
                )
                return
            model, messages = str(body.get("model") or "fake"), _as_chat(body)
            offered = any(
                isinstance(t, dict) and t.get("name") == "read_evidence" for t in body.get("tools") or []
            )
            if mind is not None:
                minded_reads = minded_model.unread(messages, offered)
                if minded_reads:
                    blocks = [
                        {
                            "type": "tool_use",
                            "id": f"toolu_read_{n}",
                            "name": "read_evidence",
                            "input": {"id": e},
                        }
                        for n, e in enumerate(minded_reads)
                    ]
                    self.send_json(200, _message(model, blocks, "tool_use"))
                    return
                minded = minded_model.answer(mind, model, messages)
                self.send_json(200, _message(model, [{"type": "text", "text": minded}], "end_turn"))
                return
            reply = simulated.respond(
                simulated.MODEL_PREFIX + model, messages, tools_offered=offered and not cites_unread
            )
            if reply.reads:
                blocks = [
                    {"type": "tool_use", "id": f"toolu_read_{n}", "name": "read_evidence", "input": {"id": e}}
                    for n, e in enumerate(reply.reads)
                ]
                self.send_json(200, _message(model, blocks, "tool_use"))
                return
            text = _final(model, reply.text, messages, cites_unread=cites_unread, endorse=endorse)
            self.send_json(200, _message(model, [{"type": "text", "text": text}], "end_turn"))

    with serving(Handler, "messages-model") as url:
        yield url, recorder


def _counted(model: str, body: dict[str, Any], answer: str) -> dict[str, int]:
    """The usage a provider would report: the request's tokens and the answer's, by tiktoken
    (as litellm counts them for an OpenAI model)."""
    import litellm

    prompt = litellm.token_counter(model=model, messages=body.get("messages") or [], tools=body.get("tools"))
    completion = litellm.token_counter(model=model, text=answer)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _final(model: str, text: str, messages: list[Any], *, cites_unread: bool, endorse: bool) -> str:
    """The final answer: the simulated one; with ``endorse``, an endorsement of every head
    citing one item it read; with ``cites_unread``, its first claim cites the
    first item the briefing left out, unread."""
    briefing = next(
        (found for m in messages if isinstance(m, dict) and m.get("role") == "user"
         if isinstance(m.get("content"), str) and (found := simulated._fenced_json(m["content"]))),
        {},
    )  # fmt: skip
    output = json.loads(text)
    if endorse:
        read = [found for m in messages if m.get("role") == "tool" and (found := read_id(m["content"]))]
        # One item each, picked by the model's name: readers that cite the same pair would be
        # one correlated group, not independent support.
        picked = read[sum(model.encode()) % len(read)] if read else None
        cites = [{"evidence_id": picked, "role": "supports", "interpretation": f"As {model} reads it."}]
        heads = (briefing.get("packet") or {}).get("heads") or []
        output = {
            "summary": "[reading model] endorses what the evidence it read supports.",
            "claims": [
                {"node_version_id": h["version_id"], "type": "endorse", "confidence": 0.9,
                 "rationale": f"{model}: the evidence read supports it.", "cites": cites if picked else []}
                for h in heads
            ],
        }  # fmt: skip
    left_out = briefing.get("evidence_not_given") or []
    if cites_unread and left_out and output.get("claims"):
        cite = {"evidence_id": left_out[-1], "role": "supports", "interpretation": "As it reads."}
        output["claims"][0]["cites"] = [cite]
    return json.dumps(output)


def _as_chat(body: dict[str, Any]) -> list[dict[str, Any]]:
    """An Anthropic request's conversation as chat messages (tool results as ``tool``)."""
    chat: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        chat.append(
            {"role": "system", "content": system if isinstance(system, str) else _blocks_text(system)}
        )
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                chat.append({"role": message.get("role"), "content": block.get("text", "")})
            elif block.get("type") == "tool_result":
                result = block.get("content")
                chat.append(
                    {"role": "tool", "content": result if isinstance(result, str) else _blocks_text(result)}
                )
    return chat


def _blocks_text(blocks: Any) -> str:
    return "".join(str(b.get("text", "")) for b in blocks or [] if isinstance(b, dict))


def _message(model: str, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": "msg_reading",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 7},
    }


def _tool_round(model: str, reads: tuple[str, ...]) -> dict[str, Any]:
    calls = [
        {"id": f"call_read_{n}", "type": "function",
         "function": {"name": "read_evidence", "arguments": json.dumps({"id": e})}}
        for n, e in enumerate(reads)
    ]  # fmt: skip
    done = _completion(model, "")
    done["choices"] = [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": None, "tool_calls": calls},
        }
    ]
    return done


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
