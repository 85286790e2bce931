"""Asking a claimed run's model, or its agent CLI, and applying the answer (docs/architecture.md
§7): the calls of one attempt of ``council.services.execution``.

Every call the provider answered is added to the run's :class:`~council.domain.bill.Bill`
as it returns, before its answer is read, so whatever ends the attempt — an answer
applied, invalid output after the re-prompt, a provider's refusal or a transient error
after a tool round — the caller still holds what was billed, and stores it with the run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from council import config
from council.agents import gateway
from council.agents.compiler import cli_reprompt, evidence_offer, reprompt
from council.agents.errors import PermanentLLMError
from council.agents.pricing import price, unpriced_reason
from council.agents.runtimes import cli
from council.agents.runtimes.registry import cli_driver
from council.agents.runtimes.trace import Trace
from council.agents.runtimes.workdir import EvidenceFile
from council.domain.agent_output import AgentOutput
from council.domain.answer import json_text
from council.domain.bill import Bill
from council.domain.output_check import References, references
from council.domain.profile import Profile
from council.domain.requests import StoredRequest
from council.domain.results.runs import Applied
from council.errors import BadInput
from council.known_secrets import redact
from council.ledger.run_rows import ClaimedRun
from council.services.evidence_reads import (
    EvidenceReads,
    answer_reads,
    assistant_turn,
    kept_text,
    refuse_unread,
)
from council.services.in_tx.output import apply_checked
from council.services.ports import UnitOfWork
from council.services.run_answers import keep_answer, kept_if_refused

# An agent CLI's deadline when its profile names none; it is always kept below the lease.
CLI_TIMEOUT_S = 240.0
CLI_READS = "whose file under evidence/ in your working directory you opened (open it, then cite it)"
LEASE_SHARE = 0.8


class InvalidOutput(Exception):
    """The answer was refused after its one re-prompt (the reason is stored on the run)."""


@dataclass
class CliRecord:
    """What an agent CLI's calls left to store with the attempt, however it ends."""

    traces: list[dict[str, Any]] = field(default_factory=list)
    opened: list[dict[str, str]] = field(default_factory=list)

    def add(self, trace: Trace, opened: Sequence[EvidenceFile] = ()) -> None:
        self.traces.append(trace.document())
        tool = cli_driver(trace.runtime).read_tool
        self.opened += [{"evidence_id": f.evidence_id, "file": f.file, "tool": tool} for f in opened]


def ask_api(
    uow: UnitOfWork, run: ClaimedRun, attempt: int, request: StoredRequest, profile: Profile, bill: Bill
) -> Applied | None:
    """Call the model and apply its answer, fenced on the attempt. A call that asks to
    read evidence is answered (each read recorded as opened first) and the model called
    again, for at most the request's ``tool_turns`` rounds; an invalid answer is re-prompted
    once with the reason. The answer is checked where it is written (:func:`apply_answer`:
    check, lint and apply in one transaction), so an answer is never judged against a
    ledger older than the one it lands in. None: the attempt was fenced out."""
    messages: list[dict[str, Any]] = list(request["messages"])
    tools, tool_turns = request.get("tools") or None, int(request.get("tool_turns") or 0)
    offer = evidence_offer(request)  # the inline part was recorded as opened when it was claimed
    reads = None if offer is None else EvidenceReads(inline=offer[0], readable=offer[1])
    calls_before = bill.calls  # an earlier attempt's calls (its answers are kept under their own attempt)
    turns = 0
    reprompted = False
    while True:
        completion = gateway.complete(
            profile.model,
            messages,
            dict(request["params"]),
            api_base=profile.api_base,
            api_key_env=profile.api_key_env,
            tools=tools,
        )
        bill.add(completion.usage, completion.cost_usd, completion.unpriced)  # billed, whatever follows
        if completion.simulated != profile.simulated:  # defensive: what ran must be what was pinned
            raise PermanentLLMError(
                f"{profile.model}: the answer says simulated={completion.simulated}, "
                f"the pinned executor simulated={profile.simulated}"
            )
        # Redacted before anything of it is stored or parsed (a key the model echoed).
        completion = replace(completion, text=redact(completion.text, []))
        # Kept before it is checked, numbered within this attempt.
        answer = (bill.calls - 1 - calls_before, redact(kept_text(completion), []))
        bill.note("simulated", completion.simulated)
        try:
            if completion.tool_calls:
                keep_answer(uow, run.id, attempt, *answer)
                if reads is None or not tools or turns >= tool_turns:
                    raise ValueError(
                        f"asks for tools after its {tool_turns} rounds of tool calls: answer now"
                    )
                turns += 1
                bill.note("tool_rounds", turns)
                answered = answer_reads(uow, run.id, attempt, completion.tool_calls, reads)
                if answered is None:
                    return None
                messages = [*messages, assistant_turn(completion), *answered]
                continue
            with kept_if_refused(uow, run.id, attempt, answer):
                output = AgentOutput.model_validate_json(json_text(completion.text))
                if reads is not None:
                    refuse_unread(output, reads.citable())
            return apply_answer(uow, run.id, attempt, output, bill=bill, answer=answer)
        except (ValidationError, ValueError, BadInput) as exc:  # the answer was kept
            reason = one_line(exc)
            if reprompted:
                raise InvalidOutput(reason) from exc
            reprompted = True
            bill.note("reprompted")
            messages = reprompt(messages, kept_text(completion), reason)


def apply_answer(
    uow: UnitOfWork,
    run_id: UUID,
    attempt: int,
    output: AgentOutput,
    *,
    bill: Bill,
    record: CliRecord | None = None,
    answer: tuple[int, str] | None = None,
) -> Applied | None:
    """Check and apply the output, lint its prose and close the run (with what it was
    billed, and an agent CLI's traces), in one transaction; None for a fenced-out attempt.
    An invalid output raises BadInput and nothing is written (the caller may re-prompt).
    ``answer`` (its round and text) is kept by the same transaction, first, whether or
    not the attempt is fenced out; when the transaction rolls back, in one of its own."""
    kept = kept_if_refused(uow, run_id, attempt, answer) if answer is not None else nullcontext()
    usage, cost_usd = bill.stored()
    try:  # what the check will read, read by the statement that fences the run
        refs: References | None = references(output)
    except (BadInput, ValueError):  # the check refuses it, once the run is fenced, as before
        refs = None
    with kept, uow() as tx:
        ended = tx.runs.end(
            run_id,
            attempt,
            answer=answer,
            versions=refs.claimed_versions if refs is not None else (),
            evidence=refs.evidence if refs is not None else (),
        )
        run = ended.run
        if run is None:
            return None
        if record is not None:
            tx.traces.record(run_id, attempt, record.traces, record.opened)
        return apply_checked(
            tx,
            run,
            attempt,
            output,
            actor=f"run:{run['agent']}",
            usage=usage,
            cost_usd=cost_usd,
            facts=ended.facts if refs is not None else None,
        )


def ask_cli(
    uow: UnitOfWork,
    run: ClaimedRun,
    attempt: int,
    request: StoredRequest,
    profile: Profile,
    record: CliRecord,
    bill: Bill,
) -> Applied | None:
    """Run the agent CLI on the stored prompt in a fresh working directory holding the
    briefing's evidence, then check and apply its answer as for any run (one bounded
    re-prompt); every call's trace lands in ``record``, its reported tokens (priced by
    litellm's price map where the model has a price) in ``bill``. The deadline covers
    both calls and stays below the lease."""
    files = request["settings"].get("evidence_files") or []
    with uow() as tx:
        contents = tx.evidence.contents([f["evidence_id"] for f in files])
    deadline = time.monotonic() + min(profile.timeout_s or CLI_TIMEOUT_S, config.run_lease_s() * LEASE_SHARE)
    prompt = request["prompt"]
    bill.note("runtime", profile.runtime)
    bill.note("simulated", False)
    reason = ""
    for call_no in (1, 2):
        try:
            answer = cli.call(
                request,
                profile,
                contents,
                prompt=prompt,
                call_no=call_no,
                deadline_s=max(0.1, deadline - time.monotonic()),
            )
        except (cli.CliFailed, cli.CliTimedOut, cli.CliTransient) as exc:
            if exc.trace is not None:
                record.add(exc.trace)
            raise
        record.add(answer.trace, answer.opened)
        kept = (call_no - 1, answer.text)  # kept by the apply's transaction, or before a re-prompt
        tokens = _prompt_and_completion(answer.trace.usage)
        cost = price(profile.model, tokens)
        bill.add(tokens, cost, None if cost is not None else unpriced_reason(profile.model, tokens))
        try:
            with kept_if_refused(uow, run.id, attempt, kept):
                output = AgentOutput.model_validate_json(json_text(answer.text))
                # A CLI reads the evidence files of its working directory: it cites only what it opened.
                refuse_unread(output, [o["evidence_id"] for o in record.opened], how=CLI_READS)
            return apply_answer(uow, run.id, attempt, output, bill=bill, record=record, answer=kept)
        except (ValidationError, ValueError, BadInput) as exc:
            reason = one_line(exc)
            if call_no == 1:
                bill.note("reprompted")
                prompt = cli_reprompt(request["prompt"], answer.text, reason)
    raise InvalidOutput(reason)


def _prompt_and_completion(usage: dict[str, int]) -> dict[str, int]:
    """An agent CLI reports input and output tokens (its own usage report); they are
    recorded under the names API runs use too, so totals add up across runtimes, beside
    the CLI's own names."""
    tokens = dict(usage)
    for theirs, ours in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
        if theirs in tokens:
            tokens[ours] = tokens[theirs]
    return tokens


def one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:500]
