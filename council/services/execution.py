"""Executing one agent run on a worker (docs/architecture.md §7).

In order: claim the run for an attempt (lease + fencing token, and the
attempt's record of which worker took it); check that this worker can run the
pinned executor — its runtime, and for a real model the key variable it
names — or fail the run with the reason (a real run never falls back to the
simulator, nor a simulated one to a real model); compile the request from the
pinned executor and store it, its hash and its exposures before the call — or
reuse the one an earlier attempt stored, so a retry sends exactly what was
hashed; call the model through the gateway (one attempt); check, lint and
apply the answer in one transaction fenced on the attempt (one bounded
re-prompt with the validation error); then enqueue consolidation of every
node version it touched and, when its round is complete, the next round — or,
when it completes a review dispatch, adjudicate the proposal under review (unless its
thread reviews by hand).

A transient model error releases the run for the task to retry (the one retry
policy lives in the task), or on the last try allowed fails it with the reason
and the number of tries.
"""

from __future__ import annotations

import os
import socket
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from council import metrics
from council.adapters.scheduler import Scheduler
from council.agents import gateway
from council.agents.compiler import reprompt
from council.agents.errors import PermanentLLMError, TransientLLMError
from council.domain.agent_output import AgentOutput
from council.domain.profile import Profile
from council.domain.results.runs import Applied, Executed
from council.errors import BadInput
from council.ledger.runs import TERMINAL
from council.ledger.unit import UnitOfWork
from council.services.dispatch import compile_for
from council.services.reentry import lint_prose
from council.services.retraction import adjudicate_if_automatic

# How long an attempt owns its run before the sweep may hand it to another worker.
LEASE_S = float(os.environ.get("COUNCIL_RUN_LEASE_S", "300"))
REVIEW_ACTOR = "worker:review"


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def execute_run(
    uow: UnitOfWork,
    scheduler: Scheduler,
    run_id: UUID,
    *,
    owner: str | None = None,
    try_no: int = 1,
    last_try: bool = False,
) -> Executed:
    """Run one agent run to a terminal state. A transient model error releases
    the run and propagates (the task retries it), unless this is the last try
    the retry policy allows (``last_try``): then the run fails with the reason
    and ``try_no``, the number of tries it had."""
    worker = owner or worker_id()
    with uow() as tx:
        run = tx.runs.claim(run_id, owner=worker, lease_s=LEASE_S)
    if run is None:
        return Executed(run_id=run_id, status="skipped")  # done already, or leased by a live attempt
    with metrics.run_attempt(run.agent) as observed:
        try:
            result = _attempt(uow, scheduler, run, worker, try_no=try_no, last_try=last_try)
        except TransientLLMError:
            observed.status = "transient_error"  # the task retries it
            raise
        observed.status = result.status
        return result


def _attempt(
    uow: UnitOfWork, scheduler: Scheduler, run: Any, worker: str, *, try_no: int, last_try: bool
) -> Executed:
    """One claimed attempt: check the pinned executor can run here, compile (or
    reuse) the request, ask, apply fenced on the attempt."""
    attempt = int(run.attempt)
    try:
        profile = _runnable(run, worker)
    except _Unrunnable as exc:
        return _failed(uow, scheduler, run, attempt, str(exc))
    if run.request is None:
        with uow() as tx:
            compiled = compile_for(
                tx,
                profile,
                run.thread_id,
                mode=run.mode,
                round_no=run.round,
                dispatch_id=run.dispatch_id,
                proposal_id=run.proposal_id,
            )
            stored = tx.runs.store_request(run.id, attempt, compiled)
        if not stored:
            return Executed(run_id=run.id, status="fenced")
        request = compiled.canonical()
    else:
        request = run.request
    if request["model"] != profile.model:
        reason = f"the stored request names {request['model']}, the pinned executor {profile.model}"
        return _failed(uow, scheduler, run, attempt, reason)
    try:
        applied = _ask_and_apply(uow, run, attempt, request, profile)
    except TransientLLMError as exc:
        if last_try:
            return _failed(uow, scheduler, run, attempt, f"no answer after {try_no} tries: {exc}")
        with uow() as tx:
            tx.runs.release(run.id, attempt, str(exc))  # any worker may take the retry
        raise
    except PermanentLLMError as exc:
        return _failed(uow, scheduler, run, attempt, str(exc))
    except _InvalidOutput as exc:
        reason = f"invalid output after one re-prompt: {exc}"
        return _failed(uow, scheduler, run, attempt, reason, usage=exc.usage, error=str(exc))
    if applied is None:
        return Executed(run_id=run.id, status="fenced")
    result = Executed(
        run_id=run.id,
        status="succeeded",
        touched_versions=applied.touched_versions,
        lint_findings=applied.lint_findings,
    )
    return _after(uow, scheduler, run, result)


class _Unrunnable(Exception):
    """This worker cannot run the pinned executor; the reason is stored on the run."""


def _runnable(run: Any, worker: str) -> Profile:
    """The run's pinned executor, when this worker can run it as pinned: never
    the simulator in place of a real model, nor the reverse."""
    try:
        profile = Profile.from_pinned(run.executor)
    except ValueError as exc:
        raise _Unrunnable(f"{exc}; dispatch it again") from None
    label = f"{profile.name} ({profile.model})"
    if profile.runtime != "litellm":
        raise _Unrunnable(
            f"worker {worker} cannot run runtime {profile.runtime} yet, for the profile {label}"
        )
    if not profile.simulated and profile.api_key_env and not os.environ.get(profile.api_key_env):
        raise _Unrunnable(f"worker {worker} has no {profile.api_key_env} for the real profile {label}")
    return profile


def _failed(
    uow: UnitOfWork,
    scheduler: Scheduler,
    run: Any,
    attempt: int,
    reason: str,
    *,
    usage: dict[str, Any] | None = None,
    error: str | None = None,
) -> Executed:
    """Record the run's failure with its reason (fenced); nothing else is written.
    A zombie attempt (a newer one owns the run) writes nothing and hands nothing on."""
    reason = " ".join(reason.split())[:2000] or "failed"
    with uow() as tx:
        fenced = tx.runs.fence(run.id, attempt)
        if fenced is not None:
            tx.runs.finish(
                fenced, attempt, status="failed", usage=usage, error=reason, event_payload={"reason": reason}
            )
    if fenced is None:
        return Executed(run_id=run.id, status="fenced")
    return _after(uow, scheduler, run, Executed(run_id=run.id, status="failed", error=error or reason))


class _InvalidOutput(Exception):
    def __init__(self, reason: str, usage: dict[str, Any]) -> None:
        super().__init__(reason)
        self.usage = usage


def _ask_and_apply(
    uow: UnitOfWork, run: Any, attempt: int, request: dict[str, Any], profile: Profile
) -> Applied | None:
    """Call the model and apply its answer, fenced on the attempt; on an invalid
    answer, re-prompt once with the reason. The answer is checked where it is
    written (:func:`_apply`: check, lint and apply in one transaction), so an
    answer is never judged against a ledger older than the one it lands in.
    None: the attempt was fenced out."""
    messages = request["messages"]
    usage: dict[str, Any] = {"calls": 0}
    cost = 0.0
    reason = ""
    for call in range(2):
        completion = gateway.complete(
            profile.model,
            messages,
            dict(request["params"]),
            api_base=profile.api_base,
            api_key_env=profile.api_key_env,
        )
        if completion.simulated != profile.simulated:  # defensive: what ran must be what was pinned
            raise PermanentLLMError(
                f"{profile.model}: the answer says simulated={completion.simulated}, "
                f"the pinned executor simulated={profile.simulated}"
            )
        usage["calls"] += 1
        for key, value in (completion.usage or {}).items():
            if isinstance(value, int | float):
                usage[key] = usage.get(key, 0) + value
        cost += completion.cost_usd or 0.0
        usage["simulated"] = completion.simulated
        try:
            output = AgentOutput.model_validate_json(json_text(completion.text))
            return _apply(uow, run.id, attempt, output, usage=usage, cost_usd=cost if cost else None)
        except (ValidationError, ValueError, BadInput) as exc:
            reason = _one_line(exc)
            if call == 0:
                usage["reprompted"] = True
                messages = reprompt(request, completion.text, reason)
                continue
            usage.pop("simulated", None)
            raise _InvalidOutput(reason, usage) from exc
    raise _InvalidOutput(reason, usage)


def _apply(
    uow: UnitOfWork,
    run_id: UUID,
    attempt: int,
    output: AgentOutput,
    *,
    usage: dict[str, Any] | None,
    cost_usd: float | None,
) -> Applied | None:
    """Check and apply the output, lint its prose and close the run, in one
    transaction; None for a fenced-out attempt. An invalid output raises
    BadInput and nothing is written (the caller may re-prompt)."""
    with uow() as tx:
        run = tx.runs.fence(run_id, attempt)
        if run is None:
            return None
        findings = [
            f.json_document() for f in lint_prose(tx, run["thread_id"], prose(output))
        ]  # before its writes
        applied = tx.outputs.apply(run, output, actor=f"run:{run['agent']}")
        tx.runs.finish(
            run,
            attempt,
            status="succeeded",
            usage=usage,
            cost_usd=cost_usd,
            lint_findings=findings,
            event_payload={"lint_findings": len(findings)},
        )
        return applied.model_copy(update={"lint_findings": len(findings)})


def _after(uow: UnitOfWork, scheduler: Scheduler, run: Any, result: Executed) -> Executed:
    if result.touched_versions:
        scheduler.enqueue_evaluations(result.touched_versions)
    if run.dispatch_id is None:
        return result
    with uow() as tx:
        following = tx.runs.next_round(run.dispatch_id, int(run.round) + 1)
        tx.runs.mark_queued(following)
    if following:
        scheduler.enqueue_runs(following)
    adjudication = None
    if run.mode == "review" and run.proposal_id is not None and not following:
        adjudication = _adjudicate_when_reviewed(uow, run.dispatch_id, run.proposal_id)
    return result.model_copy(update={"next_round_runs": following, "adjudication": adjudication})


def _adjudicate_when_reviewed(uow: UnitOfWork, dispatch_id: UUID, proposal_id: UUID) -> str | None:
    """The last run of a review dispatch to end adjudicates its proposal. Runs
    ending together may both see the dispatch complete; adjudication is
    idempotent and serialized under the node lock, so that is harmless."""
    with uow() as tx:
        runs = tx.runs.of_dispatch(dispatch_id)
    if all(r.status in TERMINAL for r in runs):
        decided = adjudicate_if_automatic(uow, proposal_id, actor=REVIEW_ACTOR)
        return None if decided is None else decided.outcome
    return None


def json_text(text: str) -> str:
    """Accept a bare JSON document or one fenced ```json block around it."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    return stripped


def prose(output: AgentOutput) -> str:
    """What of an answer the epistemic-word check reads: its summary and rationales."""
    parts = [output.summary, *(c.rationale for c in output.claims), *(v.rationale for v in output.votes)]
    return "\n\n".join(p for p in parts if p)


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:500]


def prepare() -> None:
    """What a worker does once, before its pool forks: load the model library
    (seconds of CPU each pool process would otherwise spend on its first run)."""
    gateway.preload()
