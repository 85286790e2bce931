"""Runs begun outside the workers and held until they end (docs/architecture.md §7): a run recorded by
hand (`council run record`), held by its recorder until it closes it, adding claims
meanwhile; and a run begun by an outside agent over MCP, held by its session until it
submits its output or the session ends. Neither is ever taken by a worker or the sweep:
it is ``running`` with its holder as lease owner and no lease expiry. Part of
:class:`council.ledger.runs.Runs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict
from uuid import UUID

from council.domain import validate as v
from council.domain.commands import RecordedRun
from council.domain.providers import provider_family
from council.domain.requests import Exposure
from council.domain.results.runs import RunClosed, RunRecorded
from council.domain.vocabulary import TERMINAL_RUN_STATUSES
from council.errors import BadInput, NotFound
from council.ledger.events import append
from council.ledger.lookup import InThread, require, require_row, require_same_thread, resolve
from council.ledger.pg import Connection, Row, column, execute, fetch, fetch_one, id_of
from council.ledger.run_rows import FencedRun

# The lease owner of a run recorded by hand: its recorder, until it closes the run.
RECORDER_PREFIX = "record:"


def recorder(actor: str) -> str:
    return RECORDER_PREFIX + actor


class HandRun(TypedDict):
    """The columns of a run's row that a claim by hand is checked against."""

    id: UUID
    thread_id: UUID
    attempt: int
    agent: str
    mode: str
    status: str
    lease_owner: str | None


def refuse_unheld(run: HandRun, actor: str) -> None:
    """Claims by hand (`council claim add`, ``POST /runs/{id}/claims``) land only on a run
    recorded by hand (`council run record`) that its recorder, ``actor``, has not closed:
    a worker's run claims only through its own fenced output, a run begun over MCP only
    through its session's submission, and a closed or failed run takes nothing (docs/architecture.md §7).
    BadInput, before anything is written."""
    run_id = run["id"]
    if run["mode"] != "external":
        raise BadInput(
            f"run {run_id} is a worker's {run['mode']} run: its claims come only from its own output"
        )
    if run["status"] == "failed":
        raise BadInput(f"run {run_id} failed: a failed run takes no claim")
    if run["status"] != "running":
        raise BadInput(
            f"run {run_id} is closed ({run['status']}): it takes no more claims; record another run"
        )
    holder = run["lease_owner"] or ""
    if not holder.startswith(RECORDER_PREFIX):
        raise BadInput(f"run {run_id} was begun over MCP: only the session that holds it submits its claims")
    if holder != recorder(actor):
        raise BadInput(
            f"run {run_id} was recorded by {holder.removeprefix(RECORDER_PREFIX)}, not {actor}: "
            "only its recorder adds its claims"
        )


def hold_by_hand(conn: Connection, run: HandRun, actor: str) -> None:
    """Hold a run recorded by hand (its row, locked) that ``actor`` may add claims to
    (:func:`refuse_unheld`): fence it at its attempt, so this transaction holds it — the
    database accepts a claim only from a run its inserting transaction fenced (revision 0041)."""
    refuse_unheld(run, actor)
    execute(conn, "fence_run", run_id=run["id"], attempt=run["attempt"])


class HeldRuns:
    _conn: Connection

    if TYPE_CHECKING:

        def expose(self, run_id: UUID, exposures: Sequence[Exposure]) -> int: ...

        def fence(self, run_id: UUID, attempt: int) -> FencedRun | None: ...

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
        ) -> object: ...

    def record(self, recorded: RecordedRun, *, actor: str, held_by: str | None = None) -> RunRecorded:
        """A run made outside the workers; ``exposed_to`` names runs whose
        stances it was shown (explicit exposure, docs/architecture.md §3).

        The run is begun, not over: its holder holds its first attempt — an outside
        agent's MCP session (``held_by``) until it submits its output, or, recorded by
        hand, its recorder (:func:`recorder`) until it closes it (:meth:`close`), adding
        claims meanwhile. It is ``running`` with that holder as its lease owner and no
        lease expiry, so no worker or sweep ever takes it (:meth:`held`)."""
        hand = held_by is None
        held_by = held_by or recorder(actor)
        conn = self._conn
        provider = v.text(provider_family(recorded.model, recorded.provider), "provider", v.MAX_NAME)
        thread_id = resolve(conn, "threads", recorded.thread, "thread")
        require(conn, "threads", thread_id, "thread")
        parent_id = None
        if recorded.parent_run is not None:
            parent_id = resolve(conn, "agent_runs", recorded.parent_run, "parent run")
            parent = require_row(conn, "agent_runs", InThread, parent_id, "parent run")
            require_same_thread(parent, thread_id, "parent run")
        exposed_to = [resolve(conn, "agent_runs", other, "run") for other in recorded.exposed_to]
        for other in exposed_to:
            require_same_thread(require_row(conn, "agent_runs", InThread, other, "run"), thread_id, "run")
        [run] = fetch(
            conn,
            "add_held_run",
            Row,
            thread_id=thread_id,
            agent=recorded.agent,
            model=recorded.model,
            provider=provider,
            parent_run_id=parent_id,
            round=recorded.round_no,
            held_by=held_by,
        )
        self.expose(
            id_of(run), [Exposure("stance", "explicit", exposed_to_run_id=str(o)) for o in exposed_to]
        )
        append(
            conn,
            "run.recorded" if hand else "run.begun",
            actor=actor,
            thread_id=thread_id,
            subject_id=id_of(run),
            payload={
                "agent": recorded.agent,
                "model": recorded.model,
                "provider": provider,
                "parent_run_id": str(parent_id) if parent_id else None,
                "exposed_to": [str(o) for o in exposed_to],
            },
        )
        return RunRecorded.model_validate({**run, "exposed_to": exposed_to})

    def held(self, run_id: UUID, holder: str) -> FencedRun:
        """The fenced row (with its ``attempt``) of a begun run (:meth:`record` with ``held_by``) that
        ``holder`` holds and has not ended, locked; bad input otherwise."""
        row = fetch_one(self._conn, "held_run_state", _HeldState, run_id=run_id)
        if row is None:
            raise NotFound(f"no run with id {run_id}")
        if row.lease_owner != holder or row.status != "running":
            if row.status in TERMINAL_RUN_STATUSES and row.lease_owner is None:
                raise BadInput(f"run {run_id} has ended ({row.status}); begin another run")
            raise BadInput(
                f"run {run_id} is not one this session began; a session acts only for its own runs"
            )
        fenced = self.fence(run_id, row.attempt)
        if fenced is None:  # ended between the two statements
            raise BadInput(f"run {run_id} has ended; begin another run")
        return fenced

    def close(self, run_id: UUID, *, actor: str) -> RunClosed:
        """End a run recorded by hand, succeeded: from now on it takes no claim. Only its
        recorder closes it; bad input for anyone else's run or one already over."""
        found = require_row(self._conn, "agent_runs", HandRun, run_id, "run", lock=True)
        refuse_unheld(found, actor)
        run = self.fence(run_id, found["attempt"])
        assert run is not None  # locked above, running and held by its recorder
        [claims] = column(self._conn, "run_claim_count", int, run_id=run_id)
        self.finish(
            run,
            found["attempt"],
            status="succeeded",
            actor=actor,
            event_payload={"closed": True, "claims": claims},
        )
        return RunClosed(id=run_id, agent=found["agent"], status="succeeded", claims=int(claims))

    def abandon(self, holders: Sequence[str], reason: str) -> list[UUID]:
        """End, failed with ``reason``, every begun run the ``holders`` still hold
        (their sessions ended without an answer); the ids of those it ended."""
        if not holders:
            return []
        ended = []
        held = fetch(self._conn, "held_by_sessions", FencedRun, holders=list(holders))
        for run in held:  # locked and running: each attempt owns its run
            self.finish(run, run.attempt, status="failed", error=reason, event_payload={"reason": reason})
            ended.append(run.id)
        return ended


@dataclass(frozen=True, slots=True)
class _HeldState:
    attempt: int
    lease_owner: str | None
    status: str
