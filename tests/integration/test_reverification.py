"""Lazy re-verification of provisional memory (docs/architecture.md §5) against real Postgres:
challenged support is re-checked as if it had fallen; the council then reviews
what does not survive, and two sweeps never dispatch two reviews of one proposal."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.domain.results.consolidation import MemoryItem
from council.domain.results.reversal import Reverified
from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate, memory_list
from council.services.reversal import change_validity, request_reverification, reverify
from council.services.threads import set_review
from tests.builders import ACTOR, Ledger
from tests.engines import unit_of_work
from tests.fakes.chat_model import NOWHERE, local_profiles
from tests.rows import count

REVIEWERS = ("alpha", "beta", "gamma")


@pytest.fixture(autouse=True)
def _real_reviewers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Real profiles a thread can name as its reviewers (dispatched, never executed here)."""
    monkeypatch.setenv("COUNCIL_PROFILES", str(local_profiles(tmp_path / "p.toml", NOWHERE, *REVIEWERS)))


def _reviewed_by_name(ledger: Ledger) -> Ledger:
    """The thread's runs were recorded by hand: it names its reviewers."""
    set_review(ledger.uow, ledger.thread_id, agents=",".join(REVIEWERS), actor=ACTOR)
    return ledger


def _memory(uow: UnitOfWork, consolidation_id: Any) -> MemoryItem:
    [item] = [m for m in memory_list(uow).items if m.consolidation_id == consolidation_id]
    return item


def _three_supporters(engine: Engine) -> tuple[Ledger, Any]:
    """Three independent supporters, each citing its own evidence item (two groups suffice)."""
    ledger = Ledger.new(engine)
    version = UUID(str(ledger.node("WAL mode is safe for readers")["version_id"]))
    for i, provider in enumerate(("anthropic", "openai", "zhipu")):
        ledger.claim(ledger.run(provider), version, confidence=0.8, cites=[ledger.evidence[i]])
    return ledger, consolidate(ledger.uow, version, actor=ACTOR).consolidation_id


def _review_dispatches(engine: Engine) -> int:
    with unit_of_work(engine) as conn:
        return count(conn, "dispatches", "mode = 'review'")


def test_challenged_support_that_does_not_matter_is_stable_again_with_the_check(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given a consolidation whose memory went provisional when one of three supports was challenged
    ledger, consolidation = _three_supporters(engine)
    change_validity(uow, None, ledger.evidence[2], action="challenge", reason="old benchmark", actor=ACTOR)
    assert _memory(uow, consolidation).status == "provisional"
    # When the re-verification runs
    result = reverify(uow, Recorder())
    # Then the decision holds without that support: stable again, the check recorded, nothing to review
    [checked] = result.reverified
    assert checked.material is False and checked.memory_status == "stable"
    last = _memory(uow, consolidation).history[-1]
    assert (last.from_status, last.to_status) == ("provisional", "stable")
    assert last.details["check"] == "immaterial"
    assert last.details["challenged"] == [str(ledger.evidence[2])]
    assert result.dispatched == [] and _review_dispatches(engine) == 0


def test_challenged_support_that_matters_is_contested_and_reviewed_once(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given a consolidation with exactly two supports, one of them challenged
    ledger = _reviewed_by_name(Ledger.new(engine))
    version = ledger.ready_node()
    consolidation = consolidate(uow, version, actor=ACTOR).consolidation_id
    change_validity(
        uow, None, ledger.evidence[0], action="challenge", reason="method questioned", actor=ACTOR
    )
    # When the re-verification runs
    recorder = Recorder()
    result = reverify(uow, recorder)
    # Then memory is contested, a proposal is open, and one review of it was dispatched
    [checked] = result.reverified
    assert checked.material is True and checked.memory_status == "contested"
    assert checked.proposal_id is not None
    assert _memory(uow, consolidation).status == "contested"
    assert len(result.dispatched) == 1 and len(recorder.runs) == 3
    # And a second sweep finds nothing left to do
    again = reverify(uow, recorder)
    assert again == Reverified(reverified=[], dispatched=[])
    assert _review_dispatches(engine) == 1


def test_a_read_queues_re_verification_of_the_provisional_items_it_touched(
    engine: Engine, uow: UnitOfWork
) -> None:
    ledger, consolidation = _three_supporters(engine)
    change_validity(uow, None, ledger.evidence[1], action="challenge", reason="questioned", actor=ACTOR)
    recorder = Recorder()
    items = [item.model_dump() for item in memory_list(uow).items]
    queued = request_reverification(recorder, items)
    assert queued == [_memory(uow, consolidation).id]
    assert recorder.reverifications == [queued]
    # And only those items are re-verified when the task runs
    other = reverify(uow, Recorder(), memory_item_ids=[UUID(int=1)])
    assert other.reverified == []
    mine = reverify(uow, Recorder(), memory_item_ids=queued)
    assert [r.memory_status for r in mine.reverified] == ["stable"]


def test_concurrent_sweeps_dispatch_one_review_per_proposal(engine: Engine, uow: UnitOfWork) -> None:
    # Given an open proposal awaiting review
    ledger = _reviewed_by_name(Ledger.new(engine))
    version = ledger.ready_node()
    consolidate(uow, version, actor=ACTOR)
    change_validity(uow, None, ledger.evidence[0], action="invalidate", reason="fabricated", actor=ACTOR)
    # When eight sweeps run at once, each on its own connection
    barrier = threading.Barrier(8)
    dispatched: list[Any] = []
    errors: list[BaseException] = []

    def sweep() -> None:
        try:
            barrier.wait()
            dispatched.extend(reverify(uow, Recorder()).dispatched)
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


def test_memory_re_verification_contests_marks_the_memory_of_its_dependents_provisional(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given a consolidated root on exactly two supports, a consolidated node depending on it and
    # one depending on that, each dependent resting on evidence of its own
    ledger = Ledger.new(engine, evidence_items=4)
    root = ledger.ready_node("root")
    assert consolidate(uow, root, actor=ACTOR).outcome == "committed"
    runs = [ledger.run("anthropic"), ledger.run("openai")]

    def dependent(content: str, on: UUID) -> UUID:
        version = UUID(str(ledger.node(content, depends_on=[on])["version_id"]))
        for run, evidence in zip(runs, ledger.evidence[2:], strict=True):
            ledger.claim(run, version, cites=[evidence])
        assert consolidate(uow, version, actor=ACTOR).outcome == "committed"
        return version

    middle = dependent("middle", root)
    leaf = dependent("leaf", middle)
    # And the root's memory provisional since one of its supports was challenged (a challenge
    # does not cascade: the dependents' memory is still stable)
    change_validity(
        uow, None, ledger.evidence[0], action="challenge", reason="method questioned", actor=ACTOR
    )
    statuses = {m.node_version_id: m.status for m in memory_list(uow).items}
    assert statuses == {root: "provisional", middle: "stable", leaf: "stable"}
    # When the re-verification finds the decision does not hold without it
    recorder = Recorder()
    [checked] = reverify(uow, recorder).reverified
    # Then the root is contested and the memory of every node depending on it provisional
    assert checked.node_version_id == root and checked.memory_status == "contested"
    items = {m.node_version_id: m for m in memory_list(uow).items}
    assert {v: m.status for v, m in items.items()} == {
        root: "contested",
        middle: "provisional",
        leaf: "provisional",
    }
    for version, via in ((middle, root), (leaf, middle)):
        last = items[version].history[-1]
        assert (last.from_status, last.to_status) == ("stable", "provisional")
        assert last.reason == f"depends on contested {via}" and last.details == {"via": str(via)}
    # And the cascade finished in this pass: nothing was cut off for the queue
    assert recorder.cascades == []
    with unit_of_work(engine) as conn:
        unfinished = count(conn, "cascade_continuations", "continued_at IS NULL")
    assert unfinished == 0
