"""Agent runs from dispatch to a terminal state (DESIGN §7, delivery).

Runs are created in Postgres before anything is enqueued. A worker claims a
run for one *attempt* (a lease plus an attempt number, the fencing token);
every later write of that attempt is fenced on it, so a duplicated or
redelivered message, or a zombie earlier attempt, never writes twice.
Named SQL: council/sql/runs.sql.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Engine, insert, select, update

from council.agents.profiles import Profile
from council.domain import validate as v
from council.domain.agent_output import AgentOutput
from council.domain.epistemic import guarded_words, lint
from council.domain.requests import CompiledRequest
from council.domain.vocabulary import RUN_MODES
from council.errors import BadInput
from council.ledger import events
from council.ledger import tables as t
from council.ledger.apply_output import apply_output
from council.ledger.db import unit_of_work
from council.ledger.lint import ledger_items
from council.ledger.locks import lock_proposal
from council.ledger.lookup import require
from council.sql import query

TERMINAL = ("succeeded", "failed")


def create_dispatch(
    engine: Engine,
    *,
    thread_id: UUID,
    profiles: Sequence[Profile],
    mode: str,
    rounds: int,
    actor: str,
    proposal_id: UUID | None = None,
    once_per_proposal: bool = False,
) -> dict[str, Any]:
    """The dispatch and its first round of runs, all `created` (not yet enqueued).

    ``once_per_proposal``: when a dispatch for ``proposal_id`` exists already,
    create nothing and return it with ``already_dispatched`` (checked under the
    proposal's lock, so concurrent sweeps dispatch one review between them)."""
    v.choice(mode, "mode", [m for m in RUN_MODES if m != "external"])
    if not profiles:
        raise BadInput("name at least one agent")
    if len({p.name for p in profiles}) != len(profiles):
        raise BadInput("each agent may appear once in a dispatch")
    if not 1 <= rounds <= 20:
        raise BadInput(f"rounds must be between 1 and 20, got {rounds}")
    if mode == "review" and proposal_id is None:
        raise BadInput("a review dispatch needs --proposal")
    with unit_of_work(engine) as conn:
        require(conn, t.threads, thread_id, "thread")
        if proposal_id is not None:
            require(conn, t.retraction_proposals, proposal_id, "retraction proposal")
            if once_per_proposal:
                lock_proposal(conn, proposal_id)
                existing = conn.execute(
                    select(t.dispatches.c.id)
                    .where(t.dispatches.c.proposal_id == proposal_id)
                    .order_by(t.dispatches.c.created_at)
                    .limit(1)
                ).scalar()
                if existing is not None:
                    return {"dispatch_id": existing, "run_ids": [], "already_dispatched": True}
        dispatch_id = conn.execute(
            insert(t.dispatches)
            .values(
                thread_id=thread_id,
                mode=mode,
                agents=[p.name for p in profiles],
                rounds=rounds,
                proposal_id=proposal_id,
            )
            .returning(t.dispatches.c.id)
        ).scalar_one()
        run_ids = [
            r[0]
            for r in conn.execute(
                insert(t.agent_runs).returning(t.agent_runs.c.id),
                [
                    {
                        "thread_id": thread_id,
                        "dispatch_id": dispatch_id,
                        "agent": p.name,
                        "model": p.model,
                        "provider": p.provider,
                        "simulated": p.simulated,
                        "executor": p.pinned(),
                        "round": 1,
                        "mode": mode,
                        "proposal_id": proposal_id,
                        "status": "created",
                    }
                    for p in profiles
                ],
            )
        ]
        events.append(
            conn,
            "dispatch.created",
            actor=actor,
            thread_id=thread_id,
            subject_id=dispatch_id,
            payload={
                "mode": mode,
                "rounds": rounds,
                "agents": [p.name for p in profiles],
                "simulated": [p.name for p in profiles if p.simulated],
            },
        )
    return {"dispatch_id": dispatch_id, "run_ids": run_ids}


def mark_queued(engine: Engine, run_ids: Sequence[UUID]) -> None:
    if run_ids:
        with unit_of_work(engine) as conn:
            conn.execute(
                update(t.agent_runs)
                .where(t.agent_runs.c.id.in_(list(run_ids)), t.agent_runs.c.status == "created")
                .values(status="queued")
            )


def claim(engine: Engine, run_id: UUID, *, owner: str, lease_s: float) -> Any | None:
    """Take the run for a new attempt, or None when it is done or leased elsewhere;
    ``owner`` (the worker) is recorded as the attempt's."""
    with unit_of_work(engine) as conn:
        return conn.execute(
            query("claim_run"), {"run_id": run_id, "owner": owner, "lease_s": lease_s}
        ).first()


def store_request(engine: Engine, run_id: UUID, attempt: int, request: CompiledRequest) -> bool:
    """Record the canonical request, its hash and exposures before the call (fenced)."""
    with unit_of_work(engine) as conn:
        run = conn.execute(query("fence_run"), {"run_id": run_id, "attempt": attempt}).first()
        if run is None or run.request_sha256 is not None:
            return False
        conn.execute(
            update(t.agent_runs)
            .where(t.agent_runs.c.id == run_id)
            .values(
                request=request.canonical(),
                request_sha256=request.sha256,
                input_fingerprint=request.input_features,
            )
        )
        if request.exposures:
            conn.execute(
                insert(t.run_exposures),
                [
                    {
                        "run_id": run_id,
                        "kind": e.kind,
                        "channel": e.channel,
                        "exposed_to_run_id": e.exposed_to_run_id,
                        "claim_id": e.claim_id,
                        "node_version_id": e.node_version_id,
                    }
                    for e in request.exposures
                ],
            )
        events.append(
            conn,
            "run.started",
            actor=f"worker:{run.agent}",
            thread_id=run.thread_id,
            subject_id=run_id,
            payload={
                "attempt": attempt,
                "request_sha256": request.sha256,
                "exposures": len(request.exposures),
            },
        )
        return True


def succeed(
    engine: Engine,
    run_id: UUID,
    attempt: int,
    output: AgentOutput,
    *,
    usage: dict[str, Any] | None,
    cost_usd: float | None,
    prose: str,
) -> dict[str, Any] | None:
    """Check and apply the output, lint its prose and close the run, in one
    transaction; None for a fenced-out attempt. An invalid output raises
    BadInput and nothing is written (the caller may re-prompt)."""
    with unit_of_work(engine) as conn:
        run = conn.execute(query("fence_run"), {"run_id": run_id, "attempt": attempt}).mappings().first()
        if run is None:
            return None
        # Before this output's own writes (TRANSITIONAL: the run service will do this).
        findings = (
            [
                {
                    "sentence": f.sentence,
                    "word": f.word,
                    "category": f.category,
                    "item_id": f.item_id,
                    "reason": f.reason,
                }
                for f in lint(prose, ledger_items(conn, run["thread_id"]))
            ]
            if guarded_words(prose)
            else []
        )
        applied = apply_output(conn, run, output, actor=f"run:{run['agent']}")
        conn.execute(
            query("finish_run"),
            {
                "run_id": run_id,
                "attempt": attempt,
                "status": "succeeded",
                "usage": json.dumps(usage) if usage is not None else None,
                "cost_usd": cost_usd,
                "error": None,
                "lint_findings": json.dumps(findings),
            },
        )
        events.append(
            conn,
            "run.succeeded",
            actor=f"worker:{run['agent']}",
            thread_id=run["thread_id"],
            subject_id=run_id,
            payload={"attempt": attempt, "lint_findings": len(findings)},
        )
        return {**applied, "lint_findings": findings}


def fail(
    engine: Engine, run_id: UUID, attempt: int, reason: str, *, usage: dict[str, Any] | None = None
) -> bool:
    """Record the run's failure with its reason (fenced); nothing else is written."""
    reason = " ".join(reason.split())[:2000] or "failed"
    with unit_of_work(engine) as conn:
        run = conn.execute(query("fence_run"), {"run_id": run_id, "attempt": attempt}).first()
        if run is None:
            return False
        conn.execute(
            query("finish_run"),
            {
                "run_id": run_id,
                "attempt": attempt,
                "status": "failed",
                "usage": json.dumps(usage) if usage is not None else None,
                "cost_usd": None,
                "error": reason,
                "lint_findings": None,
            },
        )
        events.append(
            conn,
            "run.failed",
            actor=f"worker:{run.agent}",
            thread_id=run.thread_id,
            subject_id=run_id,
            payload={"attempt": attempt, "reason": reason},
        )
        return True


def release(engine: Engine, run_id: UUID, attempt: int, reason: str) -> bool:
    """Give the run back to the queue for a later try (fenced); the attempt's record keeps the reason."""
    reason = " ".join(reason.split())[:2000] or "released"
    with unit_of_work(engine) as conn:
        found = conn.execute(query("release_run"), {"run_id": run_id, "attempt": attempt, "reason": reason})
        return found.first() is not None


def next_round(engine: Engine, dispatch_id: UUID, next_round_no: int) -> list[UUID]:
    """Create the next round's runs if the round before is complete (idempotent)."""
    with unit_of_work(engine) as conn:
        return [
            r[0]
            for r in conn.execute(
                query("next_round"), {"dispatch_id": dispatch_id, "next_round": next_round_no}
            )
        ]


def previous_round_stances(engine: Engine, dispatch_id: UUID, round_no: int) -> list[dict[str, Any]]:
    with unit_of_work(engine) as conn:
        rows = conn.execute(query("previous_round_stances"), {"dispatch_id": dispatch_id, "round": round_no})
        return [dict(r) for r in rows.mappings()]


def sweep(engine: Engine, *, stale_s: float = 300, limit: int = 500) -> list[UUID]:
    """Runs to enqueue again: never started, lost, or with an expired lease."""
    with unit_of_work(engine) as conn:
        return [r[0] for r in conn.execute(query("sweep_runs"), {"stale_s": stale_s, "limit": limit})]


def dispatch_runs(engine: Engine, dispatch_id: UUID) -> list[dict[str, Any]]:
    with unit_of_work(engine) as conn:
        rows = conn.execute(
            select(
                t.agent_runs.c.id,
                t.agent_runs.c.agent,
                t.agent_runs.c.round,
                t.agent_runs.c.status,
                t.agent_runs.c.attempt,
                t.agent_runs.c.simulated,
                t.agent_runs.c.provider,
                t.agent_runs.c.error,
                t.agent_runs.c.request_sha256,
            )
            .where(t.agent_runs.c.dispatch_id == dispatch_id)
            .order_by(t.agent_runs.c.round, t.agent_runs.c.agent)
        ).mappings()
        return [dict(r) for r in rows]


def dispatch_row(engine: Engine, dispatch_id: UUID) -> dict[str, Any]:
    with unit_of_work(engine) as conn:
        return dict(require(conn, t.dispatches, dispatch_id, "dispatch"))
