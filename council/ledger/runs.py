"""Agent runs: their lineage (parent, round, exposures) as immutable facts, and
their life from dispatch to a terminal state (docs/architecture.md §7, delivery).

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

from sqlalchemy import Connection, insert, select, update

from council.domain import validate as v
from council.domain.profile import Profile
from council.domain.requests import CompiledRequest, Exposure
from council.domain.results.runs import DispatchedRun, RunShown, RunSummary
from council.domain.reviewers import Reviewers
from council.domain.vocabulary import RUN_MODES, TERMINAL_RUN_STATUSES
from council.errors import BadInput
from council.ledger import tables as t
from council.ledger.answers import Answers
from council.ledger.attempts import attempts_of
from council.ledger.dispatch_keys import first_of_key, request_sha256
from council.ledger.events import append
from council.ledger.held_runs import HeldRuns
from council.ledger.locks import lock_proposal
from council.ledger.lookup import require
from council.ledger.pg import in_transaction
from council.ledger.traces import Traces
from council.sql import query

TERMINAL = TERMINAL_RUN_STATUSES


class Runs(HeldRuns):
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def expose(self, run_id: UUID, exposures: Sequence[Exposure]) -> int:
        """Record what the run was shown (append-only rows; docs/architecture.md §3)."""
        if exposures:
            self._conn.execute(
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
                    for e in exposures
                ],
            )
        return len(exposures)

    def show(self, run_id: UUID) -> RunShown:
        """Lineage, exposures, request hash and claims of one run; the executor it
        was pinned to (``runtime`` is its runtime) and each attempt with the worker
        that ran it."""
        conn = self._conn
        run = dict(require(conn, t.agent_runs, run_id, "run"))
        whose = t.agent_runs.alias("whose")
        exposures = conn.execute(
            select(t.run_exposures, whose.c.agent.label("exposed_to_agent"))
            .outerjoin(whose, whose.c.id == t.run_exposures.c.exposed_to_run_id)
            .where(t.run_exposures.c.run_id == run_id)
            .order_by(t.run_exposures.c.created_at, t.run_exposures.c.id)
        ).mappings()
        claims = conn.execute(
            select(t.claims).where(t.claims.c.run_id == run_id).order_by(t.claims.c.created_at)
        ).mappings()
        children = conn.execute(
            select(t.agent_runs.c.id)
            .where(t.agent_runs.c.parent_run_id == run_id)
            .order_by(t.agent_runs.c.created_at)
        ).scalars()
        runtime = (run["executor"] or {}).get("runtime")
        cli_run = runtime not in (None, "litellm")
        traces = Traces(conn)
        answers = Answers(conn).of_run(run_id)
        return RunShown.model_validate(
            {
                **run,
                "runtime": runtime,
                "trace": traces.of_run(run_id) if cli_run else None,
                "opened_evidence": traces.opened_of_run(run_id),
                "attempts": attempts_of(conn, run_id),
                "answer": answers[-1] if answers else None,
                "answers": answers,
                "exposures": [dict(r) for r in exposures],
                "claims": [dict(r) for r in claims],
                "children": list(children),
            }
        )

    def of_thread(self, thread_id: UUID) -> list[RunSummary]:
        """Every run of the thread, by creation, with its operational state."""
        rows = self._conn.execute(
            select(t.agent_runs)
            .where(t.agent_runs.c.thread_id == thread_id)
            .order_by(t.agent_runs.c.created_at, t.agent_runs.c.round, t.agent_runs.c.agent)
        ).mappings()
        return [RunSummary.model_validate(dict(r)) for r in rows]

    # ---------------------------------------------------------------- dispatch

    def create_dispatch(
        self,
        *,
        thread_id: UUID,
        profiles: Sequence[Profile],
        mode: str,
        rounds: int,
        actor: str,
        proposal_id: UUID | None = None,
        once_per_proposal: bool = False,
        reviewers: Reviewers | None = None,
        key: str | None = None,
    ) -> tuple[UUID, list[UUID], bool]:
        """The dispatch and its first round of runs, each pinned to its executor and
        `created` (not yet enqueued): (dispatch id, run ids, already dispatched).

        ``once_per_proposal``: when a dispatch for ``proposal_id`` exists already,
        create nothing and return it (checked under the proposal's lock, so
        concurrent sweeps dispatch one review between them). ``reviewers``: how an
        automatic review's agents were chosen, for the event. ``key``: the client's
        idempotency key; when a dispatch with it exists, create nothing and return it with
        its first round's runs (refused when it asked for something else)."""
        v.choice(mode, "mode", [m for m in RUN_MODES if m != "external"])
        if not profiles:
            raise BadInput("name at least one agent")
        if len({p.name for p in profiles}) != len(profiles):
            raise BadInput("each agent may appear once in a dispatch")
        if not 1 <= rounds <= 20:
            raise BadInput(f"rounds must be between 1 and 20, got {rounds}")
        if mode == "review" and proposal_id is None:
            raise BadInput("a review dispatch needs a retraction proposal")
        conn = self._conn
        require(conn, t.threads, thread_id, "thread")
        asked = None
        if key is not None:
            key = v.text(key, "the idempotency key", 200)
            names = [p.name for p in profiles]
            asked = request_sha256(thread_id, names, mode, rounds, proposal_id)
            keyed = first_of_key(conn, key, asked, names)
            if keyed is not None:
                return keyed[0], keyed[1], True
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
                    return existing, [], True
        dispatch_id = conn.execute(
            insert(t.dispatches)
            .values(
                thread_id=thread_id,
                mode=mode,
                agents=[p.name for p in profiles],
                rounds=rounds,
                proposal_id=proposal_id,
                idempotency_key=key,
                request_sha256=asked,
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
        append(
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
                **({"reviewers": reviewers.document()} if reviewers is not None else {}),
            },
        )
        return dispatch_id, run_ids, False

    def mark_queued(self, run_ids: Sequence[UUID]) -> None:
        if run_ids:
            self._conn.execute(
                update(t.agent_runs)
                .where(t.agent_runs.c.id.in_(list(run_ids)), t.agent_runs.c.status == "created")
                .values(status="queued")
            )

    def waiting_of_dispatch(self, dispatch_id: UUID) -> list[UUID]:
        """The dispatch's runs still created or queued (not yet taken by a worker)."""
        return list(
            self._conn.execute(
                select(t.agent_runs.c.id).where(
                    t.agent_runs.c.dispatch_id == dispatch_id,
                    t.agent_runs.c.status.in_(["created", "queued"]),
                )
            ).scalars()
        )

    def of_dispatch(self, dispatch_id: UUID) -> list[DispatchedRun]:
        rows = self._conn.execute(
            select(t.agent_runs)
            .where(t.agent_runs.c.dispatch_id == dispatch_id)
            .order_by(t.agent_runs.c.round, t.agent_runs.c.agent)
        ).mappings()
        return [_dispatched(r) for r in rows]

    def next_round(self, dispatch_id: UUID, next_round_no: int) -> list[UUID]:
        """Create the next round's runs if the round before is complete (idempotent)."""
        found = self._conn.execute(
            query("next_round"), {"dispatch_id": dispatch_id, "next_round": next_round_no}
        )
        return [r[0] for r in found]

    def closed_round_versions(self, dispatch_id: UUID, round_no: int) -> list[UUID]:
        """The node versions round ``round_no`` claimed on, once all its runs ended (else none)."""
        found = in_transaction(
            self._conn, "round_closed_versions", {"dispatch_id": dispatch_id, "round": round_no}
        )
        return [UUID(str(r["node_version_id"])) for r in found]

    def previous_round_stances(self, dispatch_id: UUID, round_no: int) -> list[dict[str, Any]]:
        rows = self._conn.execute(
            query("previous_round_stances"), {"dispatch_id": dispatch_id, "round": round_no}
        )
        return [dict(r) for r in rows.mappings()]

    # ----------------------------------------------------------------- attempts

    def claim(
        self, run_id: UUID, *, owner: str, lease_s: float, held_attempt: int | None = None
    ) -> Any | None:
        """Take the run for a new attempt, or None when it is done or leased elsewhere;
        ``owner`` (the worker) is recorded as the attempt's. ``held_attempt``: the
        attempt this task held when a transient error cut it off, taken over at once."""
        found = in_transaction(
            self._conn,
            "claim_run",
            {"run_id": run_id, "owner": owner, "lease_s": lease_s, "held_attempt": held_attempt},
            as_tuples=True,
        )
        return found[0] if found else None

    def fence(self, run_id: UUID, attempt: int) -> Any | None:
        """The run's row, locked, if this attempt still owns it (None: fenced out)."""
        found = in_transaction(self._conn, "fence_run", {"run_id": run_id, "attempt": attempt})
        return found[0] if found else None

    def store_request(self, run_id: UUID, attempt: int, request: CompiledRequest) -> bool:
        """Record the canonical request, its hash and exposures before the call, with
        the run.started event (fenced; False when the attempt is fenced out or a
        request is stored). One statement: the claim's transaction calls it."""
        canonical = request.canonical()
        sha256 = request.sha256
        stored = in_transaction(
            self._conn,
            "store_request",
            {
                "run_id": run_id,
                "attempt": attempt,
                "request": json.dumps(canonical),
                "request_sha256": sha256,
                "input_fingerprint": json.dumps(request.input_features),
                "exposures": json.dumps([e.__dict__ for e in request.exposures]),
                "payload": json.dumps(
                    {"attempt": attempt, "request_sha256": sha256, "exposures": len(request.exposures)}
                ),
            },
        )
        return bool(stored)

    def finish(
        self,
        run: Any,
        attempt: int,
        *,
        status: str,
        usage: dict[str, Any] | None = None,
        cost_usd: float | None = None,
        error: str | None = None,
        lint_findings: list[dict[str, Any]] | None = None,
        event_payload: dict[str, Any] | None = None,
        events_before: Sequence[dict[str, Any]] = (),
        actor: str | None = None,
    ) -> None:
        """The terminal state of a fenced run (``run`` is its fenced row), with its event,
        in one statement; ``events_before`` (kind, actor, payload and, when the subject is
        not the run, subject_id: events the caller deferred to it) are appended first, in order."""
        announced = [
            *events_before,
            {
                "kind": f"run.{status}",
                "actor": actor or f"worker:{run['agent']}",
                "payload": {"attempt": attempt, **(event_payload or {})},
            },
        ]
        in_transaction(
            self._conn,
            "finish_run",
            {
                "run_id": run["id"],
                "attempt": attempt,
                "status": status,
                "usage": json.dumps(usage) if usage is not None else None,
                "cost_usd": cost_usd,
                "error": error,
                "lint_findings": json.dumps(lint_findings) if lint_findings is not None else None,
                "events": json.dumps(announced),
            },
        )

    def release(self, run_id: UUID, attempt: int, reason: str) -> bool:
        """Give the run back to the queue for a later try (fenced); the attempt's record keeps the reason."""
        reason = " ".join(reason.split())[:2000] or "released"
        found = in_transaction(
            self._conn, "release_run", {"run_id": run_id, "attempt": attempt, "reason": reason}
        )
        return bool(found)


def _dispatched(row: Any) -> DispatchedRun:
    usage = row["usage"] or {}

    def count(key: str) -> int | None:
        value = usage.get(key)
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    return DispatchedRun(
        id=row["id"],
        agent=row["agent"],
        round=row["round"],
        status=row["status"],
        attempt=row["attempt"],
        simulated=row["simulated"],
        error=row["error"],
        request_sha256=row["request_sha256"],
        prompt_tokens=count("prompt_tokens"),
        completion_tokens=count("completion_tokens"),
        cost_usd=None if row["cost_usd"] is None else float(row["cost_usd"]),
    )
