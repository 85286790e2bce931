"""Dispatching a council and executing one agent run (DESIGN §7).

Execution of one run, in order: claim it for an attempt (lease + fencing
token); compile the request — or reuse the one an earlier attempt stored, so
a retry sends exactly what was hashed; store request, hash and exposures
before the call; call the model through the gateway; parse and check the
output (one bounded re-prompt with the validation error); apply it fenced on
the attempt; then enqueue consolidation of every node version it touched and,
when its round is complete, the next round — or, when it completes a review
dispatch, adjudicate the proposal under review.
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
from council.agents.profiles import Profile, resolve
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
) -> dict[str, Any]:
    """Create the runs in Postgres first, then enqueue them (nothing, when
    ``once_per_proposal`` finds the proposal's review already dispatched)."""
    profiles = [resolve(name) for name in agents]
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
    engine: Engine, scheduler: Scheduler, run_id: UUID, *, owner: str | None = None
) -> dict[str, Any]:
    """Run one agent run to a terminal state; transient model errors propagate
    (the task retries them) after the gateway's own bounded retries."""
    run = lifecycle.claim(engine, run_id, owner=owner or worker_id(), lease_s=LEASE_S)
    if run is None:
        return {"run_id": run_id, "status": "skipped"}  # done already, or leased by a live attempt
    with metrics.run_attempt(run.agent) as observed:
        try:
            result = _attempt(engine, scheduler, run_id, run)
        except TransientLLMError:
            observed.status = "transient_error"  # the task retries it
            raise
        observed.status = str(result["status"])
        return result


def _attempt(engine: Engine, scheduler: Scheduler, run_id: UUID, run: Any) -> dict[str, Any]:
    """One claimed attempt: compile (or reuse) the request, ask, apply fenced on the attempt."""
    attempt = int(run.attempt)
    profile = resolve(run.agent)
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
        if not lifecycle.store_request(engine, run_id, attempt, compiled):
            return {"run_id": run_id, "status": "fenced"}
        request = compiled.canonical()
    else:
        request = run.request
    try:
        applied = _ask_and_apply(engine, run, attempt, request, profile.api_key_env)
    except TransientLLMError:
        lifecycle.release(engine, run_id, attempt)  # any worker may take the retry
        raise
    except PermanentLLMError as exc:
        lifecycle.fail(engine, run_id, attempt, str(exc))
        return _after(engine, scheduler, run, {"run_id": run_id, "status": "failed", "error": str(exc)}, [])
    except _InvalidOutput as exc:
        lifecycle.fail(engine, run_id, attempt, f"invalid output after one re-prompt: {exc}", usage=exc.usage)
        return _after(engine, scheduler, run, {"run_id": run_id, "status": "failed", "error": str(exc)}, [])
    if applied is None:
        return {"run_id": run_id, "status": "fenced"}
    touched = [UUID(str(v)) for v in applied["touched_versions"]]
    result = {
        "run_id": run_id,
        "status": "succeeded",
        "touched_versions": touched,
        "lint_findings": len(applied["lint_findings"]),
    }
    return _after(engine, scheduler, run, result, touched)


def give_up(engine: Engine, scheduler: Scheduler, run_id: UUID, reason: str) -> dict[str, Any]:
    """Retries are exhausted: fail the run with its reason (a visible end state)."""
    run = lifecycle.claim(engine, run_id, owner=worker_id(), lease_s=LEASE_S)
    if run is None:
        return {"run_id": run_id, "status": "skipped"}
    lifecycle.fail(engine, run_id, int(run.attempt), reason)
    metrics.count_run(run.agent, "failed")
    return _after(engine, scheduler, run, {"run_id": run_id, "status": "failed", "error": reason}, [])


class _InvalidOutput(Exception):
    def __init__(self, reason: str, usage: dict[str, Any]) -> None:
        super().__init__(reason)
        self.usage = usage


def _ask_and_apply(
    engine: Engine, run: Any, attempt: int, request: dict[str, Any], key_env: str | None
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
            request["model"], messages, dict(request["params"]), api_key_env=key_env
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
