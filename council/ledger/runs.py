"""Agent runs: lineage (parent, round, exposures) recorded as immutable facts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Engine, insert, select

from council.domain import validate as v
from council.domain.providers import provider_family
from council.errors import BadInput
from council.ledger import events
from council.ledger import tables as t
from council.ledger.attempts import attempts_of
from council.ledger.db import unit_of_work
from council.ledger.lookup import require, require_same_thread


def record_run(
    engine: Engine,
    *,
    thread_id: UUID,
    agent: str,
    model: str,
    actor: str,
    provider: str | None = None,
    parent_run_id: UUID | None = None,
    exposed_to: Sequence[UUID] = (),
    round_no: int = 1,
) -> dict[str, Any]:
    """Record a run made outside the workers. `exposed_to` names runs whose
    stances this run was shown (explicit exposure, DESIGN §3)."""
    agent = v.text(agent, "agent", v.MAX_NAME)
    model = v.text(model, "model", v.MAX_NAME * 2)
    provider = v.text(provider_family(model, provider), "provider", v.MAX_NAME)
    if round_no < 1:
        raise BadInput(f"round must be at least 1, got {round_no}")
    v.count(exposed_to, "exposures")
    with unit_of_work(engine) as conn:
        require(conn, t.threads, thread_id, "thread")
        if parent_run_id is not None:
            require_same_thread(
                require(conn, t.agent_runs, parent_run_id, "parent run"), thread_id, "parent run"
            )
        for other in exposed_to:
            require_same_thread(require(conn, t.agent_runs, other, "run"), thread_id, "run")
        run = (
            conn.execute(
                insert(t.agent_runs)
                .values(
                    thread_id=thread_id,
                    agent=agent,
                    model=model,
                    provider=provider,
                    parent_run_id=parent_run_id,
                    round=round_no,
                    mode="external",
                    status="succeeded",
                )
                .returning(t.agent_runs)
            )
            .mappings()
            .one()
        )
        if exposed_to:
            conn.execute(
                insert(t.run_exposures),
                [
                    {"run_id": run["id"], "kind": "stance", "channel": "explicit", "exposed_to_run_id": other}
                    for other in exposed_to
                ],
            )
        events.append(
            conn,
            "run.recorded",
            actor=actor,
            thread_id=thread_id,
            subject_id=run["id"],
            payload={
                "agent": agent,
                "model": model,
                "provider": provider,
                "parent_run_id": str(parent_run_id) if parent_run_id else None,
                "exposed_to": [str(o) for o in exposed_to],
            },
        )
        return {**dict(run), "exposed_to": list(exposed_to)}


def show_run(engine: Engine, run_id: UUID) -> dict[str, Any]:
    """Lineage, exposures, request hash and claims of one run; the executor it
    was pinned to (``runtime`` is its runtime) and each attempt with the worker
    that ran it."""
    with unit_of_work(engine) as conn:
        run = dict(require(conn, t.agent_runs, run_id, "run"))
        run["runtime"] = (run["executor"] or {}).get("runtime")
        run["attempts"] = attempts_of(conn, run_id)
        run["exposures"] = [
            dict(r)
            for r in conn.execute(
                select(t.run_exposures)
                .where(t.run_exposures.c.run_id == run_id)
                .order_by(t.run_exposures.c.created_at)
            ).mappings()
        ]
        run["claims"] = [
            dict(r)
            for r in conn.execute(
                select(t.claims).where(t.claims.c.run_id == run_id).order_by(t.claims.c.created_at)
            ).mappings()
        ]
        run["children"] = [
            r[0]
            for r in conn.execute(
                select(t.agent_runs.c.id)
                .where(t.agent_runs.c.parent_run_id == run_id)
                .order_by(t.agent_runs.c.created_at)
            )
        ]
        return run
