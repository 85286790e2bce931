"""Lazy re-verification of provisional memory (DESIGN §5) against real Postgres:
challenged support is re-checked as if it had fallen; the council then reviews
what does not survive, and two sweeps never dispatch two reviews of one proposal."""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

from council.ledger.consolidation_reads import memory_list
from sqlalchemy import Engine, func, select

from council.adapters.scheduler import Recorder
from council.ledger import tables as t
from council.ledger.committer import consolidate
from council.ledger.db import unit_of_work
from council.services.reversal import change, request_reverification, reverify
from tests.builders import ACTOR, Ledger


def _memory(engine: Engine, consolidation_id: Any) -> dict[str, Any]:
    [item] = [m for m in memory_list(engine)["items"] if m["consolidation_id"] == consolidation_id]
    return item


def _three_supporters(engine: Engine) -> tuple[Ledger, Any]:
    """Three independent supporters, each citing its own evidence item (two groups suffice)."""
    ledger = Ledger.new(engine)
    version = UUID(str(ledger.node("WAL mode is safe for readers")["version_id"]))
    for i, provider in enumerate(("anthropic", "openai", "zhipu")):
        ledger.claim(ledger.run(provider), version, confidence=0.8, cites=[ledger.evidence[i]])
    return ledger, consolidate(engine, version, actor=ACTOR)["consolidation_id"]


def _review_dispatches(engine: Engine) -> int:
    with unit_of_work(engine) as conn:
        return int(conn.execute(select(func.count()).where(t.dispatches.c.mode == "review")).scalar_one())


def test_challenged_support_that_does_not_matter_is_stable_again_with_the_check(engine: Engine) -> None:
    # Given a consolidation whose memory went provisional when one of three supports was challenged
    ledger, consolidation = _three_supporters(engine)
    change(engine, None, ledger.evidence[2], action="challenge", reason="old benchmark", actor=ACTOR)
    assert _memory(engine, consolidation)["status"] == "provisional"
    # When the re-verification runs
    result = reverify(engine, Recorder())
    # Then the decision holds without that support: stable again, the check recorded, nothing to review
    [checked] = result["reverified"]
    assert checked["material"] is False and checked["memory_status"] == "stable"
    last = _memory(engine, consolidation)["history"][-1]
    assert (last["from_status"], last["to_status"]) == ("provisional", "stable")
    assert last["details"]["check"] == "immaterial"
    assert last["details"]["challenged"] == [str(ledger.evidence[2])]
    assert result["dispatched"] == [] and _review_dispatches(engine) == 0


def test_challenged_support_that_matters_is_contested_and_reviewed_once(engine: Engine) -> None:
    # Given a consolidation with exactly two supports, one of them challenged
    ledger = Ledger.new(engine)
    version = ledger.ready_node()
    consolidation = consolidate(engine, version, actor=ACTOR)["consolidation_id"]
    change(engine, None, ledger.evidence[0], action="challenge", reason="method questioned", actor=ACTOR)
    # When the re-verification runs
    recorder = Recorder()
    result = reverify(engine, recorder)
    # Then memory is contested, a proposal is open, and one review of it was dispatched
    [checked] = result["reverified"]
    assert checked["material"] is True and checked["memory_status"] == "contested"
    assert checked["proposal_id"] is not None
    assert _memory(engine, consolidation)["status"] == "contested"
    assert len(result["dispatched"]) == 1 and len(recorder.runs) == 3
    # And a second sweep finds nothing left to do
    again = reverify(engine, recorder)
    assert again == {"reverified": [], "dispatched": []}
    assert _review_dispatches(engine) == 1


def test_a_read_queues_re_verification_of_the_provisional_items_it_touched(engine: Engine) -> None:
    ledger, consolidation = _three_supporters(engine)
    change(engine, None, ledger.evidence[1], action="challenge", reason="questioned", actor=ACTOR)
    recorder = Recorder()
    items = memory_list(engine)["items"]
    queued = request_reverification(recorder, items)
    assert queued == [UUID(str(_memory(engine, consolidation)["id"]))]
    assert recorder.reverifications == [queued]
    # And only those items are re-verified when the task runs
    other = reverify(engine, Recorder(), memory_item_ids=[UUID(int=1)])
    assert other["reverified"] == []
    mine = reverify(engine, Recorder(), memory_item_ids=queued)
    assert [r["memory_status"] for r in mine["reverified"]] == ["stable"]


def test_concurrent_sweeps_dispatch_one_review_per_proposal(engine: Engine) -> None:
    # Given an open proposal awaiting review
    ledger = Ledger.new(engine)
    version = ledger.ready_node()
    consolidate(engine, version, actor=ACTOR)
    change(engine, None, ledger.evidence[0], action="invalidate", reason="fabricated", actor=ACTOR)
    # When eight sweeps run at once, each on its own connection
    barrier = threading.Barrier(8)
    dispatched: list[Any] = []
    errors: list[BaseException] = []

    def sweep() -> None:
        try:
            barrier.wait()
            dispatched.extend(reverify(engine, Recorder())["dispatched"])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=sweep) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    # Then exactly one review dispatch exists, and one sweep reports it
    assert errors == []
    assert len(dispatched) == 1 and _review_dispatches(engine) == 1
