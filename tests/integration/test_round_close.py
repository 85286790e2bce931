"""Whether a round closed is asked by each run's end, in its own writing transaction, under
the dispatch's advisory lock (``council_round_state_v1``, revision 0043): two runs of one
round ending at the same time never both see the other still running. Two real Postgres
backends, interleaved so that without the lock both would read the round open."""

from __future__ import annotations

import threading
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.ledger.run_rows import RoundEnd
from council.services.dispatch import dispatch
from council.services.ports import UnitOfWork
from tests.builders import ACTOR, Ledger
from tests.engines import uow_of


def _ended(uow: UnitOfWork, run_id: UUID, attempt: int, out: list[RoundEnd | None],
           ended: threading.Event, release: threading.Event) -> None:  # fmt: skip
    """End the run (failed) in a transaction held open until ``release``."""
    with uow() as tx:
        fenced = tx.runs.fence(run_id, attempt)
        assert fenced is not None
        out.append(tx.runs.finish(fenced, attempt, status="failed", error="stopped by the test"))
        ended.set()
        assert release.wait(30)


def test_two_runs_ending_at_once_never_both_see_their_round_open(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a two-round dispatch whose first round is two runs, both claimed by workers
    monkeypatch.setenv("COUNCIL_SIMULATE", "1")
    ledger = Ledger.new(engine, evidence_items=1)
    ledger.node("The replica keeps up", cites=list(ledger.evidence))
    uow, scheduler = uow_of(engine), Recorder()
    agents = ["claude", "codex"]
    dispatch(uow, scheduler, ledger.thread_id, agents, mode="deliberative", rounds=2, actor=ACTOR)
    first, second = scheduler.runs
    attempts = {}
    for run_id, worker in ((first, "w1"), (second, "w2")):
        with uow() as tx:
            begun = tx.runs.begin(run_id, owner=worker, lease_s=300)
            assert begun.run is not None
            attempts[run_id] = begun.run.attempt
    # When the first run's end has asked (and found the second still running) but not yet
    # committed, and the second run ends meanwhile in another transaction
    a_out: list[RoundEnd | None] = []
    b_out: list[RoundEnd | None] = []
    a_ended, a_release = threading.Event(), threading.Event()
    b_ended, b_release = threading.Event(), threading.Event()
    b_release.set()
    a = threading.Thread(target=_ended, args=(uow, first, attempts[first], a_out, a_ended, a_release))
    a.start()
    assert a_ended.wait(30)
    b = threading.Thread(target=_ended, args=(uow, second, attempts[second], b_out, b_ended, b_release))
    b.start()
    # Then the second waits for the dispatch's lock while the first holds it
    assert not b_ended.wait(1.5)
    a_release.set()
    a.join(30)
    b.join(30)
    # And once the first committed, the second's end sees the first's: exactly one of the
    # two closed the round
    [a_end], [b_end] = a_out, b_out
    assert a_end is not None and b_end is not None
    assert (a_end.closed, b_end.closed) == (False, True)
    assert (a_end.round, b_end.round) == (1, 1)
    # And the closed round's answer names what it touched (two failed runs: nothing)
    assert b_end.versions == ()
