"""Executing one agent run on a worker (docs/architecture.md §7).

In order: claim the run for an attempt (lease + fencing token, and the
attempt's record of which worker took it); check that this worker can run the
pinned executor — its runtime, and for a real model the key variable it
names — or fail the run with the reason (a real run never falls back to the
simulator, nor a simulated one to a real model); compile the request from the
pinned executor and store it, its hash and its exposures before the call — or
reuse the one an earlier attempt stored, so a retry sends exactly what was
hashed; converse with the model through its runtime's port
(``council.agents.runtime``: the gateway for an API model, or an agent CLI run in a fresh
working directory holding the briefing's evidence), whatever it billed, kept or opened
recorded by the attempt's record (``council.services.run_calls``); check, lint and
apply the answer in one transaction fenced on the attempt, in the one loop of every
runtime (:func:`converse_and_apply`: one bounded re-prompt with the validation error);
then enqueue consolidation of every
node version it touched and, when its round is complete, the next round — or,
when it completes a review dispatch, adjudicate the proposal under review (unless its
thread reviews by hand).

A transient model error releases the run and :func:`try_run` returns
``RetryAt(attempt)`` for the task to retry (the one retry policy is applied by the
tasks' base class, ``council/workers/retrying.py``), or on the last try allowed fails it
with the reason and the number of tries.

Whatever the calls were billed is stored with the run however it ends, and carried from
an attempt a transient error cut off to the next (``council.domain.bill``). A run whose
agent failed for good in an earlier round of its dispatch — a permanent error, or an
endpoint that could not be reached on any try — fails at its claim, without a call:
"skipped: AGENT failed in round R: REASON" (docs/guide/agent-runs.md).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from uuid import UUID

from pydantic import ValidationError

from council import config, metrics
from council.adapters.scheduler import Scheduler
from council.agents.errors import PermanentLLMError, TransientLLMError, UnreachableLLMError
from council.agents.runtime import Answer, Ask, FencedOut, Runtime
from council.agents.runtimes import installed
from council.agents.runtimes.ports import runtime_for
from council.agents.runtimes.registry import RUNTIME_OF, is_api
from council.domain.agent_output import AgentOutput
from council.domain.answer import json_text
from council.domain.bill import Bill
from council.domain.profile import Profile
from council.domain.requests import StoredRequest
from council.domain.results.runs import Applied, Executed
from council.domain.retry import RetryAt
from council.errors import BadInput, Transient
from council.ledger.run_phases import Begun
from council.ledger.run_rows import ClaimedRun, RoundEnd
from council.services.evidence_reads import refuse_unread
from council.services.in_tx.briefing import compile_for
from council.services.in_tx.round_opening import open_at_close
from council.services.ports import Tx, UnitOfWork
from council.services.run_answers import kept_if_refused
from council.services.run_calls import AttemptRecord, apply_answer, stored
from council.services.run_followups import follow_up
from council.settings import settings

# The runtimes whose runs are given the briefing's evidence inline (the claim reads its text).
API_RUNTIMES = tuple(sorted(name for name in RUNTIME_OF if is_api(name)))

# How long an attempt owns its run before the sweep may hand it to another worker:
# config.run_lease_s() (COUNCIL_RUN_LEASE_S), read at each claim.


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
            # One call claims the run and reads its round's briefing and inline evidence
            # (council_begin_run_v1); in the same transaction (the row is locked by the claim):
            # check the pinned executor can run here, and store the request before the call.
            begun = tx.runs.begin(
                run_id,
                owner=worker,
                lease_s=config.run_lease_s(),
                held_attempt=held_attempt,
                api_runtimes=API_RUNTIMES,
            )
            run = begun.run
            prepared = None if run is None else _prepare(tx, run, worker, begun)
    except Transient as exc:
        return RetryAt(held_attempt, exc)
    if run is None or prepared is None:
        return Executed(run_id=run_id, status="skipped")  # done already, or leased by a live attempt
    with metrics.run_attempt(run.agent) as observed:
        try:
            result = _attempt(uow, scheduler, run, prepared, try_no=try_no, last_try=last_try)
        except Transient as exc:
            observed.status = "transient_error"  # the task retries it
            return RetryAt(run.attempt, exc)
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
    or why the run cannot run here (``failure``: ``permanent``, or None for a run skipped
    because its agent is down)."""

    profile: Profile | None = None
    request: StoredRequest | None = None
    unrunnable: str | None = None
    failure: str | None = "permanent"


def _prepare(tx: Tx, run: ClaimedRun, worker: str, begun: Begun) -> _Prepared:
    """Inside the claim's transaction: the pinned executor, if this worker can run it and
    its agent has not failed for good earlier in the dispatch, and the request — compiled
    and stored (its hash and exposures) now, or the one an earlier attempt stored, so a
    retry sends exactly what was hashed."""
    if run.agent_down is not None:
        down = run.agent_down
        why = f"skipped: {run.agent} failed in round {down['round']}: {down['error'] or 'no reason recorded'}"
        return _Prepared(unrunnable=why, failure=None)
    try:
        profile = _runnable(run, worker)
    except _Unrunnable as exc:
        return _Prepared(unrunnable=str(exc))
    if run.request is None:
        request = _compiled_and_stored(tx, run, profile, begun)
    else:  # a later attempt sends what the first stored
        request = run.request
        if opened := runtime_for(profile.runtime).given(request):
            tx.traces.record(run.id, run.attempt, [], stored(opened))
    return _Prepared(profile=profile, request=request)


def _compiled_and_stored(tx: Tx, run: ClaimedRun, profile: Profile, begun: Begun) -> StoredRequest:
    """The request compiled now — from the round's briefing and evidence texts the claim
    read, when it found them — stored with its hash, its exposures and the evidence it
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
        shared=begun.briefing,
        evidence_texts=begun.evidence,
    )
    request = compiled.canonical()
    opened = stored(runtime_for(profile.runtime).given(request))
    if not tx.runs.store_request(run.id, run.attempt, compiled, opened=opened):
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
    """One claimed attempt: fail it when the pinned executor cannot run here (or its agent
    is down), else converse with the stored request and apply the answer fenced on the
    attempt; what the calls were billed is stored however it ends."""
    bill = Bill.carried(run.usage, run.cost_usd)  # what earlier attempts were billed
    record = AttemptRecord(uow, run, bill)
    if prepared.unrunnable is not None or prepared.profile is None or prepared.request is None:
        reason = prepared.unrunnable or "not runnable"
        return _failed(
            uow, scheduler, run, run.attempt, reason, bill=bill, record=record, failure=prepared.failure
        )
    profile, request = prepared.profile, prepared.request
    if request["model"] != profile.model:
        reason = f"the stored request names {request['model']}, the pinned executor {profile.model}"
        return _failed(
            uow, scheduler, run, run.attempt, reason, bill=bill, record=record, failure="permanent"
        )
    error: str | None = None
    try:
        landed = converse_and_apply(uow, run, request, profile, runtime_for(profile.runtime), record)
    except TransientLLMError as exc:
        unreachable = isinstance(exc, UnreachableLLMError)
        tries_unreachable = bill.count("unreachable_tries") if unreachable else 0
        if not last_try:
            usage, cost_usd = bill.stored()
            with uow() as tx:
                # any worker may take the retry; what was billed so far stays with the run
                if tx.runs.release(run.id, run.attempt, str(exc), usage=usage, cost_usd=cost_usd):
                    tx.traces.record(run.id, run.attempt, record.traces, stored(record.opened))
            raise
        reason = f"no answer after {try_no} tries: {exc}"
        # Down for the rest of the dispatch only if no try ever reached the endpoint.
        failure = "unreachable" if unreachable and tries_unreachable >= try_no else None
    except PermanentLLMError as exc:
        reason, failure = str(exc), "permanent"
    except InvalidOutput as exc:
        reason, failure, error = f"invalid output after one re-prompt: {exc}", None, str(exc)
    else:
        if landed is None:
            return Executed(run_id=run.id, status="fenced")
        applied, ended = landed
        metrics.count_usage(profile.provider, profile.model, bill.usage, bill.cost_usd)
        result = Executed(
            run_id=run.id,
            status="succeeded",
            touched_versions=applied.touched_versions,
            lint_findings=applied.lint_findings,
        )
        return follow_up(uow, scheduler, run, result, ended)
    return _failed(
        uow, scheduler, run, run.attempt, reason, bill=bill, record=record, failure=failure, error=error,
        profile=profile,
    )  # fmt: skip


class InvalidOutput(Exception):
    """The answer was refused after its one re-prompt (the reason is stored on the run)."""


def converse_and_apply(
    uow: UnitOfWork,
    run: ClaimedRun,
    request: StoredRequest,
    profile: Profile,
    runtime: Runtime,
    record: AttemptRecord,
) -> tuple[Applied, RoundEnd | None] | None:
    """The one loop of every runtime: ask the runtime, check its answer and apply it,
    fenced on the attempt; an answer refused — it does not parse, cites what the run was
    neither given nor opened, or its apply refuses it — is re-prompted once with the
    reason, then :class:`InvalidOutput`. The answer is checked where it is written
    (:func:`apply_answer`: check, lint and apply in one transaction), so it is never
    judged against a ledger older than the one it lands in. With what was written, what the
    run's end found of its round (:func:`apply_answer`). None: the attempt was fenced out.
    Whatever each call was billed is in ``record`` however this ends."""
    ask = Ask(request)
    while True:
        try:
            answer = runtime.converse(ask, profile, record)
        except FencedOut:
            return None
        try:
            output = _checked(uow, run, answer)
            kept = (answer.round, answer.text)  # kept by the apply's transaction
            return apply_answer(
                uow, run.id, run.attempt, output, bill=record.bill, record=record, answer=kept, claimed=run
            )
        except (ValidationError, ValueError, BadInput) as exc:  # the answer was kept
            reason = one_line(exc)
            if ask.reprompt is not None:
                raise InvalidOutput(reason) from exc
            record.bill.note("reprompted")
            ask = ask.reprompted(answer, reason)


def _checked(uow: UnitOfWork, run: ClaimedRun, answer: Answer) -> AgentOutput:
    """The answer as the contract's output, citing only what the run was given or opened;
    a refused answer is kept in its own transaction first."""
    if answer.refused is not None:  # the runtime kept it
        raise ValueError(answer.refused)
    with kept_if_refused(uow, run.id, run.attempt, (answer.round, answer.text)):
        output = AgentOutput.model_validate_json(json_text(answer.text))
        if answer.citable is not None:
            refuse_unread(output, answer.citable, how=answer.reads)
    return output


def one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:500]


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
    bill: Bill,
    failure: str | None = None,
    error: str | None = None,
    record: AttemptRecord | None = None,
    profile: Profile | None = None,
) -> Executed:
    """Record the run's failure with its reason and what its calls were billed (fenced),
    and an agent CLI's traces; nothing else is written. ``failure`` (permanent,
    unreachable) says its agent cannot answer in this dispatch. A zombie attempt (a newer
    one owns the run) writes nothing and hands nothing on."""
    reason = " ".join(reason.split())[:2000] or "failed"
    usage, cost_usd = bill.stored(failure)
    ended: RoundEnd | None = None
    with uow() as tx:
        fenced = tx.runs.fence(run.id, attempt)
        if fenced is not None:
            if record is not None:
                tx.traces.record(run.id, attempt, record.traces, stored(record.opened))
            ended = tx.runs.finish(
                fenced,
                attempt,
                status="failed",
                usage=usage,
                cost_usd=cost_usd,
                error=reason,
                event_payload={"reason": reason},
            )
            ended = open_at_close(tx, run, ended)
    if fenced is None:
        return Executed(run_id=run.id, status="fenced")
    if profile is not None and bill.calls:  # its tokens were used all the same
        metrics.count_usage(profile.provider, profile.model, bill.usage, bill.cost_usd)
    failed = Executed(run_id=run.id, status="failed", error=error or reason)
    return follow_up(uow, scheduler, run, failed, ended)
