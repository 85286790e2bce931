"""Executing one agent run on a worker (docs/architecture.md §7).

In order: claim the run for an attempt (lease + fencing token, and the
attempt's record of which worker took it); check that this worker can run the
pinned executor — its runtime, and for a real model the key variable it
names — or fail the run with the reason (a real run never falls back to the
simulator, nor a simulated one to a real model); compile the request from the
pinned executor and store it, its hash and its exposures before the call — or
reuse the one an earlier attempt stored, so a retry sends exactly what was
hashed; call the model through the gateway (one attempt) — or, for an agent-CLI
runtime, run the CLI once in a fresh working directory holding the briefing's
evidence (``council.agents.runtimes.cli``), its traces and the evidence it
opened written with the attempt's end however it ends; check, lint and
apply the answer in one transaction fenced on the attempt (one bounded
re-prompt with the validation error); then enqueue consolidation of every
node version it touched and, when its round is complete, the next round — or,
when it completes a review dispatch, adjudicate the proposal under review (unless its
thread reviews by hand).

A transient model error releases the run and :func:`try_run` returns
``RetryAt(attempt)`` for the task to retry (the one retry policy is applied by the
tasks' base class, ``council/workers/retrying.py``), or on the last try allowed fails it
with the reason and the number of tries.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from council import config, metrics
from council.adapters.scheduler import Scheduler
from council.agents import gateway
from council.agents.compiler import cli_reprompt, evidence_offer, given_evidence, reprompt
from council.agents.errors import PermanentLLMError, TransientLLMError
from council.agents.runtimes import cli, installed
from council.agents.runtimes.registry import cli_driver, is_api
from council.agents.runtimes.trace import Trace
from council.agents.runtimes.workdir import EvidenceFile
from council.domain.agent_output import AgentOutput
from council.domain.answer import json_text
from council.domain.profile import Profile
from council.domain.requests import StoredRequest
from council.domain.results.runs import Applied, Executed
from council.domain.retry import RetryAt
from council.errors import BadInput, Transient
from council.known_secrets import redact
from council.ledger.run_rows import ClaimedRun
from council.services.evidence_reads import (
    EvidenceReads,
    answer_reads,
    assistant_turn,
    kept_text,
    refuse_unread,
)
from council.services.in_tx.briefing import compile_for
from council.services.in_tx.output import apply_checked
from council.services.ports import Tx, UnitOfWork
from council.services.run_answers import keep_answer, kept_if_refused
from council.services.run_followups import follow_up
from council.settings import settings

# How long an attempt owns its run before the sweep may hand it to another worker:
# config.run_lease_s() (COUNCIL_RUN_LEASE_S), read at each claim.
# An agent CLI's deadline when its profile names none; it is always kept below the lease.
CLI_TIMEOUT_S = 240.0
CLI_READS = "whose file under evidence/ in your working directory you opened (open it, then cite it)"
LEASE_SHARE = 0.8


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def try_run(
    uow: UnitOfWork,
    scheduler: Scheduler,
    run_id: UUID,
    *,
    owner: str | None = None,
    try_no: int = 1,
    last_try: bool = False,
    held_attempt: int | None = None,
) -> Executed | RetryAt:
    """One try of a run, to a terminal state or to :class:`RetryAt`. A transient
    model error releases the run and asks for a retry, unless this is the last try
    the retry policy allows (``last_try``): then the run fails with the reason and
    ``try_no``, the number of tries it had. Any transient error that cuts off a
    claimed attempt asks for the retry at that attempt, which the retry, given it
    back (``held_attempt``), takes over at once — also when a lost database
    connection kept the attempt from releasing the run; one that comes before the
    claim (the database still away) asks for it at the attempt this try was given."""
    worker = owner or worker_id()
    try:
        with uow() as tx:
            run = tx.runs.claim(run_id, owner=worker, lease_s=config.run_lease_s(), held_attempt=held_attempt)
            # In the claim's transaction (one round trip fewer, and the row is locked by the
            # claim): check the pinned executor can run here, and store the request before the call.
            prepared = None if run is None else _prepare(tx, run, worker)
    except Transient as exc:
        return RetryAt(held_attempt, exc)
    if run is None or prepared is None:
        return Executed(run_id=run_id, status="skipped")  # done already, or leased by a live attempt
    with metrics.run_attempt(run.agent) as observed:
        try:
            result = _attempt(uow, scheduler, run, prepared, try_no=try_no, last_try=last_try)
        except Transient as exc:
            observed.status = "transient_error"  # the task retries it
            return RetryAt(int(run.attempt), exc)
        observed.status = result.status
        return result


def execute_run(
    uow: UnitOfWork,
    scheduler: Scheduler,
    run_id: UUID,
    *,
    owner: str | None = None,
    try_no: int = 1,
    last_try: bool = False,
    held_attempt: int | None = None,
) -> Executed:
    """:func:`try_run` for a caller with no task to retry it (the benchmarks, the tests,
    a script): the transient error that asks for a retry is raised."""
    outcome = try_run(
        uow, scheduler, run_id, owner=owner, try_no=try_no, last_try=last_try, held_attempt=held_attempt
    )
    if isinstance(outcome, RetryAt):
        raise outcome.error
    return outcome


@dataclass(frozen=True)
class _Prepared:
    """What the claim's transaction found: the runnable executor and the request to send,
    or why the run cannot run here."""

    profile: Profile | None = None
    request: StoredRequest | None = None
    unrunnable: str | None = None


def _prepare(tx: Tx, run: ClaimedRun, worker: str) -> _Prepared:
    """Inside the claim's transaction: the pinned executor, if this worker can run it, and
    the request — compiled and stored (its hash and exposures) now, or the one an earlier
    attempt stored, so a retry sends exactly what was hashed."""
    try:
        profile = _runnable(run, worker)
    except _Unrunnable as exc:
        return _Prepared(unrunnable=str(exc))
    if run.request is None:
        request = _compiled_and_stored(tx, run, profile)
    else:  # a later attempt sends what the first stored
        request = run.request
        if opened := _given_inline(profile, request):
            tx.traces.record(run.id, int(run.attempt), [], opened)
    return _Prepared(profile=profile, request=request)


def _given_inline(profile: Profile, request: StoredRequest) -> list[dict[str, str]]:
    """The evidence an API request gives inline: what an API run reads, recorded as opened
    before the request is sent."""
    given = given_evidence(request) if is_api(profile.runtime) else None
    return [{"evidence_id": e, "file": "inline", "tool": "briefing"} for e in given or ()]


def _compiled_and_stored(tx: Tx, run: ClaimedRun, profile: Profile) -> StoredRequest:
    """The request compiled now, stored with its hash, its exposures and the evidence it
    gives inline as opened, in one statement (the first attempt)."""
    compiled = compile_for(
        tx,
        profile,
        run.thread_id,
        mode=run.mode,
        round_no=run.round,
        dispatch_id=run.dispatch_id,
        proposal_id=run.proposal_id,
        thread_known=True,
        control=run.control_of is not None,
        run_id=run.id,
    )
    request = compiled.canonical()
    if not tx.runs.store_request(run.id, int(run.attempt), compiled, opened=_given_inline(profile, request)):
        raise RuntimeError(f"run {run.id}: its claim's transaction could not store its request")
    return request


def _attempt(
    uow: UnitOfWork,
    scheduler: Scheduler,
    run: ClaimedRun,
    prepared: _Prepared,
    *,
    try_no: int,
    last_try: bool,
) -> Executed:
    """One claimed attempt: fail it when the pinned executor cannot run here, else ask
    with the stored request and apply the answer fenced on the attempt."""
    attempt = int(run.attempt)
    if prepared.unrunnable is not None or prepared.profile is None or prepared.request is None:
        return _failed(uow, scheduler, run, attempt, prepared.unrunnable or "not runnable")
    profile, request = prepared.profile, prepared.request
    if request["model"] != profile.model:
        reason = f"the stored request names {request['model']}, the pinned executor {profile.model}"
        return _failed(uow, scheduler, run, attempt, reason)
    record = _Record()
    try:
        if is_api(profile.runtime):
            applied = _ask_and_apply(uow, run, attempt, request, profile)
        else:
            applied = _ask_cli_and_apply(uow, run, attempt, request, profile, record)
    except TransientLLMError as exc:
        if last_try:
            reason = f"no answer after {try_no} tries: {exc}"
            return _failed(uow, scheduler, run, attempt, reason, record=record)
        with uow() as tx:
            if tx.runs.release(run.id, attempt, str(exc)):  # any worker may take the retry
                tx.traces.record(run.id, attempt, record.traces, record.opened)
        raise
    except PermanentLLMError as exc:
        return _failed(uow, scheduler, run, attempt, str(exc), record=record)
    except _InvalidOutput as exc:
        reason = f"invalid output after one re-prompt: {exc}"
        done = _failed(uow, scheduler, run, attempt, reason, usage=exc.usage, error=str(exc), record=record)
        if done.status == "failed":  # its tokens were used all the same
            metrics.count_usage(profile.provider, profile.model, exc.usage, None)
        return done
    if applied is None:
        return Executed(run_id=run.id, status="fenced")
    result = Executed(
        run_id=run.id,
        status="succeeded",
        touched_versions=applied.touched_versions,
        lint_findings=applied.lint_findings,
    )
    return follow_up(uow, scheduler, run, result)


class _Unrunnable(Exception):
    """This worker cannot run the pinned executor; the reason is stored on the run."""


def _runnable(run: ClaimedRun, worker: str) -> Profile:
    """The run's pinned executor, when this worker can run it as pinned: never
    the simulator in place of a real model, nor the reverse."""
    try:
        profile = Profile.from_pinned(run.executor)
    except ValueError as exc:
        raise _Unrunnable(f"{exc}; dispatch it again") from None
    label = f"{profile.name} ({profile.model})"
    if not is_api(profile.runtime):
        missing = installed.missing_reason(profile.runtime, profile.cli_version)
        if missing:
            raise _Unrunnable(f"worker {worker} cannot run the profile {label}: {missing}")
    if not profile.simulated and profile.api_key_env and not settings().variable(profile.api_key_env):
        raise _Unrunnable(f"worker {worker} has no {profile.api_key_env} for the real profile {label}")
    return profile


def _failed(
    uow: UnitOfWork,
    scheduler: Scheduler,
    run: ClaimedRun,
    attempt: int,
    reason: str,
    *,
    usage: dict[str, Any] | None = None,
    error: str | None = None,
    record: _Record | None = None,
) -> Executed:
    """Record the run's failure with its reason (fenced), and an agent CLI's traces;
    nothing else is written. A zombie attempt (a newer one owns the run) writes
    nothing and hands nothing on."""
    reason = " ".join(reason.split())[:2000] or "failed"
    with uow() as tx:
        fenced = tx.runs.fence(run.id, attempt)
        if fenced is not None:
            if record is not None:
                tx.traces.record(run.id, attempt, record.traces, record.opened)
            tx.runs.finish(
                fenced, attempt, status="failed", usage=usage, error=reason, event_payload={"reason": reason}
            )
    if fenced is None:
        return Executed(run_id=run.id, status="fenced")
    return follow_up(uow, scheduler, run, Executed(run_id=run.id, status="failed", error=error or reason))


class _InvalidOutput(Exception):
    def __init__(self, reason: str, usage: dict[str, Any]) -> None:
        super().__init__(reason)
        self.usage = usage


@dataclass
class _Record:
    """What an agent CLI's calls left to store with the attempt, however it ends."""

    traces: list[dict[str, Any]] = field(default_factory=list)
    opened: list[dict[str, str]] = field(default_factory=list)

    def add(self, trace: Trace, opened: Sequence[EvidenceFile] = ()) -> None:
        self.traces.append(trace.document())
        tool = cli_driver(trace.runtime).read_tool
        self.opened += [{"evidence_id": f.evidence_id, "file": f.file, "tool": tool} for f in opened]


def _ask_and_apply(
    uow: UnitOfWork, run: ClaimedRun, attempt: int, request: StoredRequest, profile: Profile
) -> Applied | None:
    """Call the model and apply its answer, fenced on the attempt. A call that asks to
    read evidence is answered (each read recorded as opened first) and the model called
    again, for at most the request's ``tool_turns`` rounds; an invalid answer is re-prompted
    once with the reason. The answer is checked where it is written (:func:`_apply`: check,
    lint and apply in one transaction), so an answer is never judged against a ledger older
    than the one it lands in. None: the attempt was fenced out."""
    messages: list[dict[str, Any]] = list(request["messages"])
    tools, tool_turns = request.get("tools") or None, int(request.get("tool_turns") or 0)
    offer = evidence_offer(request)  # the inline part was recorded as opened when it was claimed
    reads = None if offer is None else EvidenceReads(inline=offer[0], readable=offer[1])
    usage: dict[str, Any] = {"calls": 0}
    cost: float | None = 0.0  # None once a call's model had no price: the run's cost is unknown
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
        if completion.simulated != profile.simulated:  # defensive: what ran must be what was pinned
            raise PermanentLLMError(
                f"{profile.model}: the answer says simulated={completion.simulated}, "
                f"the pinned executor simulated={profile.simulated}"
            )
        # Redacted before anything of it is stored or parsed (a key the model echoed).
        completion = replace(completion, text=redact(completion.text, []))
        answer = (usage["calls"], redact(kept_text(completion), []))  # kept before it is checked
        usage["calls"] += 1
        for key, value in (completion.usage or {}).items():
            if isinstance(value, int | float):
                usage[key] = usage.get(key, 0) + value
        if completion.cost_usd is None:
            cost, usage["unpriced"] = None, True
        elif cost is not None:
            cost += completion.cost_usd
        usage["simulated"] = completion.simulated
        try:
            if completion.tool_calls:
                keep_answer(uow, run.id, attempt, *answer)
                if reads is None or not tools or turns >= tool_turns:
                    raise ValueError(
                        f"asks for tools after its {tool_turns} rounds of tool calls: answer now"
                    )
                turns += 1
                usage["tool_rounds"] = turns
                answered = answer_reads(uow, run.id, attempt, completion.tool_calls, reads)
                if answered is None:
                    return None
                messages = [*messages, assistant_turn(completion), *answered]
                continue
            with kept_if_refused(uow, run.id, attempt, answer):
                output = AgentOutput.model_validate_json(json_text(completion.text))
                if reads is not None:
                    refuse_unread(output, reads.citable())
            applied = _apply(uow, run.id, attempt, output, usage=usage, cost_usd=cost, answer=answer)
            if applied is not None:
                metrics.count_usage(profile.provider, profile.model, usage, cost)
            return applied
        except (ValidationError, ValueError, BadInput) as exc:  # the answer was kept
            reason = _one_line(exc)
            if reprompted:
                usage.pop("simulated", None)
                raise _InvalidOutput(reason, usage) from exc
            reprompted = True
            usage["reprompted"] = True
            messages = reprompt(messages, kept_text(completion), reason)


def _apply(
    uow: UnitOfWork,
    run_id: UUID,
    attempt: int,
    output: AgentOutput,
    *,
    usage: dict[str, Any] | None,
    cost_usd: float | None,
    record: _Record | None = None,
    answer: tuple[int, str] | None = None,
) -> Applied | None:
    """Check and apply the output, lint its prose and close the run (with an agent
    CLI's traces), in one transaction; None for a fenced-out attempt. An invalid
    output raises BadInput and nothing is written (the caller may re-prompt).
    ``answer`` (its round and text) is kept by the same transaction, first, whether or
    not the attempt is fenced out; when the transaction rolls back, in one of its own."""
    kept = kept_if_refused(uow, run_id, attempt, answer) if answer is not None else nullcontext()
    with kept, uow() as tx:
        if answer is None:
            run = tx.runs.fence(run_id, attempt)
        else:
            run = tx.runs.fence_keeping(run_id, attempt, *answer)
        if run is None:
            return None
        if record is not None:
            tx.traces.record(run_id, attempt, record.traces, record.opened)
        return apply_checked(
            tx, run, attempt, output, actor=f"run:{run['agent']}", usage=usage, cost_usd=cost_usd
        )


def _ask_cli_and_apply(
    uow: UnitOfWork, run: ClaimedRun, attempt: int, request: StoredRequest, profile: Profile, record: _Record
) -> Applied | None:
    """Run the agent CLI on the stored prompt in a fresh working directory holding the
    briefing's evidence, then check and apply its answer as for any run (one bounded
    re-prompt); every call's trace lands in ``record``. The deadline covers both calls
    and stays below the lease."""
    files = request["settings"].get("evidence_files") or []
    with uow() as tx:
        contents = tx.evidence.contents([f["evidence_id"] for f in files])
    deadline = time.monotonic() + min(profile.timeout_s or CLI_TIMEOUT_S, config.run_lease_s() * LEASE_SHARE)
    prompt = request["prompt"]
    usage: dict[str, Any] = {"calls": 0, "runtime": profile.runtime, "simulated": False}
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
        usage["calls"] += 1
        for key, value in answer.trace.usage.items():
            usage[key] = usage.get(key, 0) + value
        _as_prompt_and_completion(usage)
        try:
            with kept_if_refused(uow, run.id, attempt, kept):
                output = AgentOutput.model_validate_json(json_text(answer.text))
                # A CLI reads the evidence files of its working directory: it cites only what it opened.
                refuse_unread(output, [o["evidence_id"] for o in record.opened], how=CLI_READS)
            applied = _apply(
                uow, run.id, attempt, output, usage=usage, cost_usd=None, record=record, answer=kept
            )
            if applied is not None:
                metrics.count_usage(profile.provider, profile.model, usage, None)
            return applied
        except (ValidationError, ValueError, BadInput) as exc:
            reason = _one_line(exc)
            if call_no == 1:
                usage["reprompted"] = True
                prompt = cli_reprompt(request["prompt"], answer.text, reason)
    raise _InvalidOutput(reason, usage)


def _as_prompt_and_completion(usage: dict[str, object]) -> None:
    """An agent CLI reports input and output tokens (its own usage report); they are
    recorded under the names API runs use too, so totals add up across runtimes. A CLI
    run's cost is not priced (``cost_usd`` NULL, ``unpriced`` in its usage)."""
    for theirs, ours in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
        if theirs in usage:
            usage[ours] = usage[theirs]
    usage["unpriced"] = True


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:500]
