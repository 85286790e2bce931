"""Dispatching a council and executing one agent run (DESIGN §7).

Dispatch resolves each profile once, where it is dispatched, and pins it on
the run (``agent_runs.executor``): what runs is what the run says will run.

Execution of one run, in order: claim it for an attempt (lease + fencing
token, and the attempt's record of which worker took it); check that this
worker can run the pinned executor — its runtime, and for a real model the key
variable it names — or fail the run with the reason (a real run never falls
back to the simulator, nor a simulated one to a real model); compile the
request from the pinned executor — or reuse the one an earlier attempt stored,
so a retry sends exactly what was hashed; store request, hash and exposures
before the call; call the model through the gateway (one attempt); parse and
check the output (one bounded re-prompt with the validation error); apply it
fenced on the attempt; then enqueue consolidation of every node version it
touched and, when its round is complete, the next round — or, when it
completes a review dispatch, adjudicate the proposal under review. A
transient model error releases the run for the task to retry, or on the last
try allowed fails it with the reason and the number of tries.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from pydantic import ValidationError
from sqlalchemy import Engine

from council import metrics
from council.agents import gateway
from council.agents.compiler import compile_request, reprompt
from council.agents.errors import PermanentLLMError, TransientLLMError
from council.agents.profiles import Profile, refuse_simulation, resolve_many, simulation_mode
from council.domain.agent_output import AgentOutput
from council.domain.requests import CompiledRequest
from council.errors import BadInput
from council.ledger import run_lifecycle as lifecycle
from council.ledger.unit import UnitOfWork
from council.services.reentry import packet_in
from council.services.retraction import adjudicate
from council.services.scheduling import Scheduler

# How long an attempt owns its run before the sweep may hand it to another worker.
LEASE_S = float(os.environ.get("COUNCIL_RUN_LEASE_S", "300"))
BRIEFING_BUDGET = 6000
REVIEW_ACTOR = "worker:review"


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def dispatch(
    engine: Engine,
    scheduler: Scheduler,
    *,
    thread_id: UUID,
    agents: Sequence[str],
    mode: str,
    rounds: int,
    actor: str,
    proposal_id: UUID | None = None,
    once_per_proposal: bool = False,
    simulate: str | None = None,
) -> dict[str, Any]:
    """Create the runs in Postgres first, each pinned to its executor, then
    enqueue them (nothing, when ``once_per_proposal`` finds the proposal's
    review already dispatched). ``simulate``: auto, always or never (else
    ``COUNCIL_SIMULATE``); under never, a dispatch that would simulate any
    profile is refused and writes nothing."""
    mode_of_simulation = simulation_mode(simulate)
    profiles = resolve_many(agents, mode_of_simulation)
    refuse_simulation(profiles, mode_of_simulation)
    created = lifecycle.create_dispatch(
        engine,
        thread_id=thread_id,
        profiles=profiles,
        mode=mode,
        rounds=rounds,
        actor=actor,
        proposal_id=proposal_id,
        once_per_proposal=once_per_proposal,
    )
    lifecycle.mark_queued(engine, created["run_ids"])
    scheduler.enqueue_runs(created["run_ids"])
    return {
        **created,
        "agents": [p.name for p in profiles],
        "simulated": [p.name for p in profiles if p.simulated],
        "simulation": mode_of_simulation,
        "executors": {
            p.name: {"model": p.model, "provider": p.provider, "simulated": p.simulated, "why": p.why}
            for p in profiles
        },
    }


def compile_for(
    engine: Engine,
    profile: Profile,
    thread_id: UUID,
    *,
    mode: str = "independent",
    round_no: int = 1,
    dispatch_id: UUID | None = None,
    proposal_id: UUID | None = None,
) -> CompiledRequest:
    """The request a run of ``profile`` would send now (used by preview and workers);
    a review run is also shown the proposal it votes on."""
    # The event high-water mark moves with every event of the thread (the dispatch itself, a
    # sibling run starting), not with what the briefing says; in the request it would make a
    # preview never hash to the request its run stores.
    with UnitOfWork(engine)() as tx:
        briefing = packet_in(tx, thread_id, budget=BRIEFING_BUDGET, blind=True)
    packet = briefing.model_copy(update={"high_water_event_id": None})
    stances: list[dict[str, Any]] = []
    if mode == "deliberative" and round_no > 1 and dispatch_id is not None:
        stances = lifecycle.previous_round_stances(engine, dispatch_id, round_no - 1)
    proposal = None
    if mode == "review" and proposal_id:
        with UnitOfWork(engine)() as tx:
            proposal = tx.retractions.briefing(proposal_id)
    return compile_request(
        profile, packet, mode=mode, round_no=round_no, previous_round=stances, proposal=proposal
    )


def execute_run(
    engine: Engine,
    scheduler: Scheduler,
    run_id: UUID,
    *,
    owner: str | None = None,
    try_no: int = 1,
    last_try: bool = False,
) -> dict[str, Any]:
    """Run one agent run to a terminal state. A transient model error releases
    the run and propagates (the task retries it), unless this is the last try
    the retry policy allows (``last_try``): then the run fails with the reason
    and ``try_no``, the number of tries it had."""
    worker = owner or worker_id()
    run = lifecycle.claim(engine, run_id, owner=worker, lease_s=LEASE_S)
    if run is None:
        return {"run_id": run_id, "status": "skipped"}  # done already, or leased by a live attempt
    with metrics.run_attempt(run.agent) as observed:
        try:
            result = _attempt(engine, scheduler, run, worker, try_no=try_no, last_try=last_try)
        except TransientLLMError:
            observed.status = "transient_error"  # the task retries it
            raise
        observed.status = str(result["status"])
        return result


def _attempt(
    engine: Engine, scheduler: Scheduler, run: Any, worker: str, *, try_no: int, last_try: bool
) -> dict[str, Any]:
    """One claimed attempt: check the pinned executor can run here, compile (or
    reuse) the request, ask, apply fenced on the attempt."""
    attempt = int(run.attempt)
    try:
        profile = _runnable(run, worker)
    except _Unrunnable as exc:
        return _failed(engine, scheduler, run, attempt, str(exc))
    if run.request is None:
        compiled = compile_for(
            engine,
            profile,
            run.thread_id,
            mode=run.mode,
            round_no=run.round,
            dispatch_id=run.dispatch_id,
            proposal_id=run.proposal_id,
        )
        if not lifecycle.store_request(engine, run.id, attempt, compiled):
            return {"run_id": run.id, "status": "fenced"}
        request = compiled.canonical()
    else:
        request = run.request
    if request["model"] != profile.model:
        reason = f"the stored request names {request['model']}, the pinned executor {profile.model}"
        return _failed(engine, scheduler, run, attempt, reason)
    try:
        applied = _ask_and_apply(engine, run, attempt, request, profile)
    except TransientLLMError as exc:
        if last_try:
            return _failed(engine, scheduler, run, attempt, f"no answer after {try_no} tries: {exc}")
        lifecycle.release(engine, run.id, attempt, str(exc))  # any worker may take the retry
        raise
    except PermanentLLMError as exc:
        return _failed(engine, scheduler, run, attempt, str(exc))
    except _InvalidOutput as exc:
        reason = f"invalid output after one re-prompt: {exc}"
        return _failed(engine, scheduler, run, attempt, reason, usage=exc.usage, error=str(exc))
    if applied is None:
        return {"run_id": run.id, "status": "fenced"}
    touched = [UUID(str(v)) for v in applied["touched_versions"]]
    result = {
        "run_id": run.id,
        "status": "succeeded",
        "touched_versions": touched,
        "lint_findings": len(applied["lint_findings"]),
    }
    return _after(engine, scheduler, run, result, touched)


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
    engine: Engine,
    scheduler: Scheduler,
    run: Any,
    attempt: int,
    reason: str,
    *,
    usage: dict[str, Any] | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    lifecycle.fail(engine, run.id, attempt, reason, usage=usage)
    return _after(
        engine, scheduler, run, {"run_id": run.id, "status": "failed", "error": error or reason}, []
    )


class _InvalidOutput(Exception):
    def __init__(self, reason: str, usage: dict[str, Any]) -> None:
        super().__init__(reason)
        self.usage = usage


def _ask_and_apply(
    engine: Engine, run: Any, attempt: int, request: dict[str, Any], profile: Profile
) -> dict[str, Any] | None:
    """Call the model and apply its answer, fenced on the attempt; on an invalid
    answer, re-prompt once with the reason. The answer is checked where it is
    written (``lifecycle.succeed``: check, lint and apply in one transaction), so
    an answer is never judged against a ledger older than the one it lands in.
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
            output = AgentOutput.model_validate_json(_json_text(completion.text))
            return lifecycle.succeed(
                engine,
                run.id,
                attempt,
                output,
                usage=usage,
                cost_usd=cost if cost else None,
                prose=_prose(output),
            )
        except (ValidationError, ValueError, BadInput) as exc:
            reason = _one_line(exc)
            if call == 0:
                usage["reprompted"] = True
                messages = reprompt(request, completion.text, reason)
                continue
            usage.pop("simulated", None)
            raise _InvalidOutput(reason, usage) from exc
    raise _InvalidOutput(reason, usage)


def _after(
    engine: Engine, scheduler: Scheduler, run: Any, result: dict[str, Any], touched: list[UUID]
) -> dict[str, Any]:
    if touched:
        scheduler.enqueue_evaluations(touched)
    if run.dispatch_id is not None:
        following = lifecycle.next_round(engine, run.dispatch_id, int(run.round) + 1)
        if following:
            lifecycle.mark_queued(engine, following)
            scheduler.enqueue_runs(following)
        result["next_round_runs"] = following
        if run.mode == "review" and run.proposal_id is not None and not following:
            _adjudicate_when_reviewed(engine, run.dispatch_id, run.proposal_id, result)
    return result


def _adjudicate_when_reviewed(
    engine: Engine, dispatch_id: UUID, proposal_id: UUID, result: dict[str, Any]
) -> None:
    """The last run of a review dispatch to end adjudicates its proposal. Runs
    ending together may both see the dispatch complete; adjudication is
    idempotent and serialized under the node lock, so that is harmless."""
    if all(r["status"] in lifecycle.TERMINAL for r in lifecycle.dispatch_runs(engine, dispatch_id)):
        result["adjudication"] = adjudicate(UnitOfWork(engine), proposal_id, actor=REVIEW_ACTOR).outcome


def _json_text(text: str) -> str:
    """Accept a bare JSON document or one fenced ```json block around it."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    return stripped


def _prose(output: AgentOutput) -> str:
    parts = [output.summary, *(c.rationale for c in output.claims), *(v.rationale for v in output.votes)]
    return "\n\n".join(p for p in parts if p)


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:500]
