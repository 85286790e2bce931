"""Agent runs: their lineage (parent, round, exposures) as immutable facts, and
their life from dispatch to a terminal state (docs/architecture.md §7, delivery).

Runs are created in Postgres before anything is enqueued. A worker claims a
run for one *attempt* (a lease plus an attempt number, the fencing token);
every later write of that attempt is fenced on it, so a duplicated or
redelivered message, or a zombie earlier attempt, never writes twice.
Named SQL: council/sql/runs.sql and council/sql/runs_path.sql, run on the unit's
connection; a run comes back as a typed row (:mod:`council.ledger.run_rows`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TypedDict
from uuid import UUID

from council.domain import validate as v
from council.domain.profile import Profile
from council.domain.protocol import CONTROLLED_MODES, CONTROLS_REFUSED
from council.domain.requests import CompiledRequest, Exposure
from council.domain.results.runs import DispatchedRun, RunShown, RunSummary
from council.domain.reviewers import Reviewers
from council.domain.round_briefing import ShownStance
from council.domain.vocabulary import DISPATCH_MODES, TERMINAL_RUN_STATUSES
from council.errors import BadInput, NotFound
from council.ledger.answers import Answers, answer_parameters
from council.ledger.attempts import attempts_of
from council.ledger.dispatch_keys import first_of_key, request_sha256
from council.ledger.events import append
from council.ledger.held_runs import HeldRuns
from council.ledger.locks import lock_proposal
from council.ledger.lookup import require
from council.ledger.pg import Connection, Row, column, execute, fetch, fetch_one
from council.ledger.run_phases import DeferredClaims, RunPhases, apply_run
from council.ledger.run_rows import FencedRun, RoundEnd
from council.ledger.traces import Traces

TERMINAL = TERMINAL_RUN_STATUSES


class Runs(HeldRuns, RunPhases):
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def expose(self, run_id: UUID, exposures: Sequence[Exposure]) -> int:
        """Record what the run was shown (append-only rows; docs/architecture.md §3)."""
        if exposures:
            execute(
                self._conn,
                "add_exposures",
                run_id=run_id,
                exposures=json.dumps([e.__dict__ for e in exposures]),
            )
        return len(exposures)

    def show(self, run_id: UUID) -> RunShown:
        """Lineage, exposures, request hash and claims of one run; the executor it
        was pinned to (``runtime`` is its runtime) and each attempt with the worker
        that ran it."""
        conn = self._conn
        run = fetch_one(conn, "run_row", Row, run_id=run_id)
        if run is None:
            raise NotFound(f"no run with id {run_id}")
        exposures = fetch(conn, "run_exposures_of", Row, run_id=run_id)
        claims = fetch(conn, "run_claims_of", Row, run_id=run_id)
        children = column(conn, "run_children", UUID, run_id=run_id)
        executor = run["executor"]
        runtime = executor.get("runtime") if isinstance(executor, dict) else None
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
                "exposures": exposures,
                "claims": claims,
                "children": children,
            }
        )

    def of_thread(self, thread_id: UUID) -> list[RunSummary]:
        """Every run of the thread, by creation, with its operational state."""
        return fetch(self._conn, "runs_of_thread", RunSummary, thread_id=thread_id)

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
        controls: bool = False,
        budget_usd: Decimal | None = None,
        simulation: str = "auto",
    ) -> tuple[UUID, list[UUID], bool]:
        """The dispatch and its first round of runs, each pinned to its executor and
        `created` (not yet enqueued): (dispatch id, run ids, already dispatched).

        ``once_per_proposal``: when a dispatch for ``proposal_id`` exists already,
        create nothing and return it (checked under the proposal's lock, so
        concurrent sweeps dispatch one review between them). ``reviewers``: how an
        automatic review's agents were chosen, for the event. ``key``: the client's
        idempotency key; when a dispatch with it exists, create nothing and return it with
        its first round's runs (refused when it asked for something else: ``budget_usd`` and
        ``simulation``, the dispatch's own budget and simulation mode, are part of what it
        asked). ``controls``: each run of a round shown stances gets a control run
        (deliberative and council only; ``next_round`` makes them). ``rounds``: every round of
        the dispatch (a council's two blind ones included)."""
        v.choice(mode, "mode", DISPATCH_MODES)
        if not profiles:
            raise BadInput("name at least one agent")
        if len({p.name for p in profiles}) != len(profiles):
            raise BadInput("each agent may appear once in a dispatch")
        if not 1 <= rounds <= 20:
            raise BadInput(f"rounds must be between 1 and 20, got {rounds}")
        if mode == "review" and proposal_id is None:
            raise BadInput("a review dispatch needs a retraction proposal")
        if controls and mode not in CONTROLLED_MODES:
            raise BadInput(CONTROLS_REFUSED)
        conn = self._conn
        require(conn, "threads", thread_id, "thread")
        asked = None
        if key is not None:
            key = v.text(key, "the idempotency key", 200)
            names = [p.name for p in profiles]
            asked = request_sha256(
                thread_id, names, mode, rounds, proposal_id, controls, budget_usd, simulation
            )
            keyed = first_of_key(conn, key, asked, names)
            if keyed is not None:
                return keyed[0], keyed[1], True
        if proposal_id is not None:
            require(conn, "retraction_proposals", proposal_id, "retraction proposal")
            if once_per_proposal:
                lock_proposal(conn, proposal_id)
                existing = column(conn, "dispatch_of_proposal", UUID, proposal_id=proposal_id)
                if existing:
                    return existing[0], [], True
        [dispatch_id] = column(
            conn,
            "add_dispatch",
            UUID,
            thread_id=thread_id,
            mode=mode,
            agents=[p.name for p in profiles],
            rounds=rounds,
            proposal_id=proposal_id,
            key=key,
            request_sha256=asked,
            controls=controls,
        )
        first_round = [
            {
                "agent": p.name,
                "model": p.model,
                "provider": p.provider,
                "simulated": p.simulated,
                "executor": p.pinned(),
            }
            for p in profiles
        ]
        run_ids = column(
            conn,
            "add_first_round",
            UUID,
            thread_id=thread_id,
            dispatch_id=dispatch_id,
            mode=mode,
            proposal_id=proposal_id,
            runs=json.dumps(first_round),
        )
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
                **({"controls": True} if controls else {}),
                **({"reviewers": reviewers.document()} if reviewers is not None else {}),
            },
        )
        return dispatch_id, run_ids, False

    def mark_queued(self, run_ids: Sequence[UUID]) -> None:
        if run_ids:
            execute(self._conn, "mark_queued", run_ids=list(run_ids))

    def waiting_of_dispatch(self, dispatch_id: UUID) -> list[UUID]:
        """The dispatch's runs still created or queued (not yet taken by a worker)."""
        return column(self._conn, "waiting_of_dispatch", UUID, dispatch_id=dispatch_id)

    def of_dispatch(self, dispatch_id: UUID) -> list[DispatchedRun]:
        rows = fetch(self._conn, "runs_of_dispatch", _DispatchedRow, dispatch_id=dispatch_id)
        return [_dispatched(r) for r in rows]

    def next_round(self, dispatch_id: UUID, next_round_no: int) -> list[UUID]:
        """Create the next round's runs if the round before is complete (idempotent)."""
        return column(self._conn, "next_round", UUID, dispatch_id=dispatch_id, next_round=next_round_no)

    def closed_round_versions(self, dispatch_id: UUID, round_no: int) -> list[UUID] | None:
        """The node versions round ``round_no`` claimed on or made, once all its runs ended;
        None while it is open."""
        [found] = fetch(
            self._conn, "round_closed_versions", _RoundClosed, dispatch_id=dispatch_id, round=round_no
        )
        if not found["closed"]:
            return None
        return list(found["versions"])

    def quorum_versions(self, run_id: UUID) -> list[UUID]:
        """Versions not yet consolidated whose council (min_council_answered) the ended run sat on."""
        return column(self._conn, "quorum_versions", UUID, run_id=run_id)

    def previous_round_stances(self, dispatch_id: UUID, round_no: int) -> list[ShownStance]:
        """The stances of round ``round_no`` as the next deliberative round is shown them, in order."""
        return fetch(
            self._conn, "previous_round_stances", ShownStance, dispatch_id=dispatch_id, round=round_no
        )

    # ----------------------------------------------------------------- attempts

    def fence(self, run_id: UUID, attempt: int) -> FencedRun | None:
        """The run's row, locked, if this attempt still owns it (None: fenced out)."""
        return fetch_one(self._conn, "fence_run", FencedRun, run_id=run_id, attempt=attempt)

    def fence_keeping(self, run_id: UUID, attempt: int, round_no: int, text: str) -> FencedRun | None:
        """Keep what round ``round_no`` of the attempt returned (as ``Answers.keep``: written
        whether or not the attempt still owns the run), then the run's row, locked, if this
        attempt still owns it (None: fenced out), as :meth:`fence`: one statement."""
        return fetch_one(
            self._conn,
            "keep_answer_and_fence",
            FencedRun,
            **answer_parameters(run_id, attempt, round_no, text),
        )

    def store_request(
        self,
        run_id: UUID,
        attempt: int,
        request: CompiledRequest,
        *,
        opened: Sequence[Mapping[str, str]] = (),
    ) -> bool:
        """Record the canonical request, its hash and exposures before the call, with
        the run.started event, and the evidence the request gives inline as opened
        (``opened``: evidence_id, file, tool; each once) (fenced; False when the attempt
        is fenced out or a request is stored). One statement: the claim's transaction calls it."""
        canonical = request.canonical()
        sha256 = request.sha256
        unique = list({o["evidence_id"]: dict(o) for o in reversed(opened)}.values())
        stored = column(
            self._conn,
            "store_request",
            object,
            run_id=run_id,
            attempt=attempt,
            request=json.dumps(canonical),
            request_sha256=sha256,
            input_fingerprint=json.dumps(request.input_features),
            exposures=json.dumps([e.__dict__ for e in request.exposures]),
            opened=json.dumps(unique),
            payload=json.dumps(
                {"attempt": attempt, "request_sha256": sha256, "exposures": len(request.exposures)}
            ),
        )
        return bool(stored)

    def finish(
        self,
        run: FencedRun,
        attempt: int,
        *,
        status: str,
        usage: dict[str, object] | None = None,
        cost_usd: float | None = None,
        error: str | None = None,
        lint_findings: list[dict[str, object]] | None = None,
        event_payload: dict[str, object] | None = None,
        events_before: Sequence[dict[str, object]] = (),
        actor: str | None = None,
        deferred: DeferredClaims | None = None,
    ) -> RoundEnd | None:
        """The terminal state of a fenced run (``run`` is its fenced row), with its event,
        in one statement (:func:`council.ledger.run_phases.apply_run`); ``events_before``
        (kind, actor, payload and, when the subject is not the run, subject_id: events the
        caller deferred to it) are appended first, in order. ``deferred``: checked claims and
        citations the writer left to this statement, inserted first. What the end found of
        the run's round, for a run of a dispatch (asked under the dispatch's lock)."""
        announced: list[dict[str, object]] = [
            *events_before,
            {
                "kind": f"run.{status}",
                "actor": actor or f"worker:{run.agent}",
                "payload": {"attempt": attempt, **(event_payload or {})},
            },
        ]
        return apply_run(
            self._conn,
            run.id,
            attempt,
            deferred if deferred is not None else DeferredClaims(),
            status=status,
            usage=usage,
            cost_usd=cost_usd,
            error=error,
            lint_findings=lint_findings,
            events=announced,
        )

    def release(
        self,
        run_id: UUID,
        attempt: int,
        reason: str,
        *,
        usage: dict[str, object] | None = None,
        cost_usd: float | None = None,
    ) -> bool:
        """Give the run back to the queue for a later try (fenced); the attempt's record keeps
        the reason, the run what it was billed so far (``usage`` None: nothing new)."""
        reason = " ".join(reason.split())[:2000] or "released"
        found = column(
            self._conn,
            "release_run",
            object,
            run_id=run_id,
            attempt=attempt,
            reason=reason,
            usage=json.dumps(usage) if usage is not None else None,
            cost_usd=cost_usd,
        )
        return bool(found)


class _RoundClosed(TypedDict):
    closed: bool
    versions: list[UUID]


class _DispatchedRow(TypedDict):
    """The columns of an agent_runs row a dispatch's listing reads (the query reads every one)."""

    id: UUID
    agent: str
    round: int
    status: str
    attempt: int
    simulated: bool
    error: str | None
    request_sha256: str | None
    usage: dict[str, object] | None
    cost_usd: Decimal | None
    control_of: UUID | None


def _dispatched(row: _DispatchedRow) -> DispatchedRun:
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
        control_of=row["control_of"],
    )
