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

from council import config, metrics
from council.adapters.scheduler import Scheduler
from council.agents.compiler import given_evidence
from council.agents.errors import PermanentLLMError, TransientLLMError, UnreachableLLMError
from council.agents.runtimes import installed
from council.agents.runtimes.registry import RUNTIME_OF, is_api
from council.domain.bill import Bill
from council.domain.profile import Profile
from council.domain.requests import StoredRequest
from council.domain.results.runs import Executed
from council.domain.retry import RetryAt
from council.errors import Transient
from council.ledger.run_phases import Begun
from council.ledger.run_rows import ClaimedRun
from council.services.in_tx.briefing import compile_for
from council.services.ports import Tx, UnitOfWork
from council.services.run_calls import CliRecord, InvalidOutput, ask_api, ask_cli
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
        if opened := _given_inline(profile, request):
            tx.traces.record(run.id, int(run.attempt), [], opened)
    return _Prepared(profile=profile, request=request)


def _given_inline(profile: Profile, request: StoredRequest) -> list[dict[str, str]]:
    """The evidence an API request gives inline: what an API run reads, recorded as opened
    before the request is sent."""
    given = given_evidence(request) if is_api(profile.runtime) else None
    return [{"evidence_id": e, "file": "inline", "tool": "briefing"} for e in given or ()]


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
    """One claimed attempt: fail it when the pinned executor cannot run here (or its agent
    is down), else ask with the stored request and apply the answer fenced on the attempt;
    what the calls were billed is stored however it ends."""
    attempt = int(run.attempt)
    bill = Bill.carried(run.usage, run.cost_usd)  # what earlier attempts were billed
    if prepared.unrunnable is not None or prepared.profile is None or prepared.request is None:
        reason = prepared.unrunnable or "not runnable"
        return _failed(uow, scheduler, run, attempt, reason, bill=bill, failure=prepared.failure)
    profile, request = prepared.profile, prepared.request
    if request["model"] != profile.model:
        reason = f"the stored request names {request['model']}, the pinned executor {profile.model}"
        return _failed(uow, scheduler, run, attempt, reason, bill=bill, failure="permanent")
    record = CliRecord()
    try:
        if is_api(profile.runtime):
            applied = ask_api(uow, run, attempt, request, profile, bill)
        else:
            applied = ask_cli(uow, run, attempt, request, profile, record, bill)
    except TransientLLMError as exc:
        unreachable = isinstance(exc, UnreachableLLMError)
        tries_unreachable = bill.count("unreachable_tries") if unreachable else 0
        if last_try:
            reason = f"no answer after {try_no} tries: {exc}"
            # Down for the rest of the dispatch only if no try ever reached the endpoint.
            down = "unreachable" if unreachable and tries_unreachable >= try_no else None
            return _failed(
                uow, scheduler, run, attempt, reason, bill=bill, record=record, failure=down, profile=profile
            )
        usage, cost_usd = bill.stored()
        with uow() as tx:
            # any worker may take the retry; what was billed so far stays with the run
            if tx.runs.release(run.id, attempt, str(exc), usage=usage, cost_usd=cost_usd):
                tx.traces.record(run.id, attempt, record.traces, record.opened)
        raise
    except PermanentLLMError as exc:
        reason, down = str(exc), "permanent"
        return _failed(
            uow, scheduler, run, attempt, reason, bill=bill, record=record, failure=down, profile=profile
        )
    except InvalidOutput as exc:
        reason = f"invalid output after one re-prompt: {exc}"
        return _failed(
            uow, scheduler, run, attempt, reason, bill=bill, error=str(exc), record=record, profile=profile
        )
    if applied is None:
        return Executed(run_id=run.id, status="fenced")
    metrics.count_usage(profile.provider, profile.model, bill.usage, bill.cost_usd)
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
    bill: Bill,
    failure: str | None = None,
    error: str | None = None,
    record: CliRecord | None = None,
    profile: Profile | None = None,
) -> Executed:
    """Record the run's failure with its reason and what its calls were billed (fenced),
    and an agent CLI's traces; nothing else is written. ``failure`` (permanent,
    unreachable) says its agent cannot answer in this dispatch. A zombie attempt (a newer
    one owns the run) writes nothing and hands nothing on."""
    reason = " ".join(reason.split())[:2000] or "failed"
    usage, cost_usd = bill.stored(failure)
    with uow() as tx:
        fenced = tx.runs.fence(run.id, attempt)
        if fenced is not None:
            if record is not None:
                tx.traces.record(run.id, attempt, record.traces, record.opened)
            tx.runs.finish(
                fenced,
                attempt,
                status="failed",
                usage=usage,
                cost_usd=cost_usd,
                error=reason,
                event_payload={"reason": reason},
            )
    if fenced is None:
        return Executed(run_id=run.id, status="fenced")
    if profile is not None and bill.calls:  # its tokens were used all the same
        metrics.count_usage(profile.provider, profile.model, bill.usage, bill.cost_usd)
    return follow_up(uow, scheduler, run, Executed(run_id=run.id, status="failed", error=error or reason))
