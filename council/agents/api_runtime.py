"""The API runtime (docs/architecture.md §7): a run's model called through the gateway
(``council.agents.gateway``), which sends each call through litellm, the OpenAI SDK
directly (``council.agents.openai_direct``) or the simulated provider
(``council.agents.simulated``), and classifies its errors.

What is this runtime's own, behind the port (``council.agents.runtime``): the
conversation as chat messages, re-prompted by continuing it; the ``read_evidence`` tool
rounds (``council.agents.evidence_tool``), at most the request's ``tool_turns``, each
read recorded as opened before its text goes back; the evidence the request gives inline,
recorded as opened with the request; the usage and price the gateway reports for each call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from council.agents import gateway
from council.agents.compiler import READ_EVIDENCE, evidence_offer, given_evidence, reprompt
from council.agents.errors import PermanentLLMError
from council.agents.evidence_tool import EvidenceReads, answer_reads, assistant_turn, kept_text
from council.agents.runtime import Answer, Ask, Opened, Record
from council.domain.profile import Profile
from council.domain.requests import StoredRequest
from council.known_secrets import redact


class ApiRuntime:
    """An API model's side of the port: one chat completion a call, through the gateway."""

    def given(self, request: StoredRequest) -> list[Opened]:
        """The evidence the request gives inline: what an API run reads, recorded as opened
        before the request is sent."""
        return [
            {"evidence_id": e, "file": "inline", "tool": "briefing"} for e in given_evidence(request) or ()
        ]

    def converse(self, ask: Ask, profile: Profile, record: Record) -> Answer:
        """Call the model until it answers: a call that asks to read evidence is answered
        and the model called again, for at most the request's ``tool_turns`` rounds over
        the attempt (a call past them is kept and refused as no answer)."""
        request = ask.request
        tools, tool_turns = request.get("tools") or None, int(request.get("tool_turns") or 0)
        offer = evidence_offer(request)  # the inline part was recorded as opened when it was claimed
        reads = None if offer is None else EvidenceReads(inline=offer[0], readable=offer[1])
        messages: Sequence[Mapping[str, object]] = list(request["messages"])
        if ask.reprompt is not None:  # the conversation so far, the refused answer, the reason
            refused = ask.reprompt.answer
            messages = reprompt(refused.conversation, refused.text, ask.reprompt.reason)
            if reads is not None and refused.citable is not None:
                reads.read = list(refused.citable[len(reads.inline) :])
        turns = _tool_rounds(messages)
        while True:
            completion = gateway.complete(
                profile.model,
                messages,
                dict(request["params"]),
                api_base=profile.api_base,
                api_key_env=profile.api_key_env,
                tools=tools,
            )
            round_no = record.billed(completion.usage, completion.cost_usd, completion.unpriced)
            if completion.simulated != profile.simulated:  # defensive: what ran must be what was pinned
                raise PermanentLLMError(
                    f"{profile.model}: the answer says simulated={completion.simulated}, "
                    f"the pinned executor simulated={profile.simulated}"
                )
            # Redacted before anything of it is stored or parsed (a key the model echoed).
            completion = replace(completion, text=redact(completion.text, []))
            text = redact(kept_text(completion), [])
            record.bill.note("simulated", completion.simulated)
            citable = None if reads is None else tuple(reads.citable())
            answer = Answer(text, round_no, citable=citable, conversation=tuple(messages))
            if not completion.tool_calls:
                return answer
            record.keep(round_no, text)
            if reads is None or not tools or turns >= tool_turns:
                return replace(
                    answer, refused=f"asks for tools after its {tool_turns} rounds of tool calls: answer now"
                )
            turns += 1
            record.bill.note("tool_rounds", turns)
            answered = answer_reads(completion.tool_calls, reads, lambda ids: record.read(ids, READ_EVIDENCE))
            messages = [*messages, assistant_turn(completion), *answered]


def _tool_rounds(messages: Sequence[Mapping[str, object]]) -> int:
    """The tool rounds the conversation holds (the stored request's messages hold none)."""
    return sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))


API = ApiRuntime()
