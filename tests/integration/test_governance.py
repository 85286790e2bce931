"""Governance by hand (docs/architecture.md §5), against real Postgres: a thread's
review setting decides whether an opened retraction proposal is reviewed
automatically, after a delay or only by hand, and a retracted version does not
consolidate again on new claims alone."""

from __future__ import annotations

import time
from pathlib import Path
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.domain.commands import NewVersion
from council.errors import BadInput
from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate, memory_list, replay
from council.services.governance import thread_governance
from council.services.nodes import add_version
from council.services.retraction import adjudicate, adjudicate_if_automatic, propose_retraction, vote
from council.services.reversal import reverify
from council.services.threads import review_settings, set_review, show_thread
from tests.builders import ACTOR, Ledger
from tests.engines import unit_of_work
from tests.fakes.chat_model import NOWHERE, local_profiles
from tests.rows import execute, row


def _retracted(ledger: Ledger) -> tuple[UUID, UUID, UUID]:
    """A consolidated version whose consolidation two independent groups voted to
    retract and a person adjudicated: (version, consolidation, proposal)."""
    version = ledger.ready_node()
    consolidation = consolidate(ledger.uow, version, actor=ACTOR).consolidation_id
    assert consolidation is not None
    proposal = propose_retraction(ledger.uow, consolidation, reason="the benchmark was rerun", actor=ACTOR).id
    for provider in ("anthropic", "openai"):
        vote(ledger.uow, proposal, ledger.run(provider), choice="endorse", actor=ACTOR, confidence=0.9)
    assert adjudicate(ledger.uow, proposal, actor=ACTOR).outcome == "retracted"
    return version, consolidation, proposal


def _endorse_again(ledger: Ledger, version: UUID) -> None:
    for i, provider in enumerate(("zhipu", "openai", "anthropic")):
        ledger.claim(ledger.run(provider), version, confidence=0.9, cites=[ledger.evidence[(i + 1) % 3]])


def test_a_thread_reviews_automatically_unless_set_and_keeps_the_history_of_its_setting(
    engine: Engine, owner_engine: Engine, uow: UnitOfWork
) -> None:
    # Given a thread created without a setting
    ledger = Ledger.new(engine)
    assert show_thread(uow, ledger.thread_id).review.review == "auto"
    # When it is set to manual, then to a delay
    set_review(uow, ledger.thread_id, "manual", actor="alice", reason="we review by hand")
    settings = set_review(uow, ledger.thread_id, "10m", actor="bob")
    # Then the delay is in force and every change is in its history, in order
    assert (settings.current.review, settings.current.delay_s) == ("delayed", 600)
    assert [(s.review, s.actor) for s in settings.history] == [
        ("auto", ACTOR),
        ("manual", "alice"),
        ("delayed", "bob"),
    ]
    assert review_settings(uow, ledger.thread_id) == settings
    # And the history cannot be edited behind the ledger's back, not even by the owner
    with pytest.raises(Exception, match="permission denied"), unit_of_work(engine) as conn:
        execute(conn, "UPDATE thread_review_settings SET review = 'auto'")
    with pytest.raises(Exception, match="council"), unit_of_work(owner_engine) as conn:
        execute(conn, "DELETE FROM thread_review_settings")


@pytest.mark.parametrize("bad", ["sometimes", "-5m", "10y", "31d"])
def test_a_bad_review_setting_is_refused_and_nothing_is_written(engine: Engine, bad: str) -> None:
    ledger = Ledger.new(engine)
    with pytest.raises(BadInput, match="review"):
        set_review(ledger.uow, ledger.thread_id, bad, actor=ACTOR)
    assert len(review_settings(ledger.uow, ledger.thread_id).history) == 1


def test_in_a_manual_thread_no_review_is_dispatched_and_people_decide(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given a manual thread with an open proposal
    ledger = Ledger.new(engine)
    set_review(uow, ledger.thread_id, "manual", actor=ACTOR)
    version = ledger.ready_node()
    consolidation = consolidate(uow, version, actor=ACTOR).consolidation_id
    assert consolidation is not None
    proposal = propose_retraction(uow, consolidation, reason="doubtful", actor=ACTOR).id
    # When re-verification passes over it
    recorder = Recorder()
    assert reverify(uow, recorder).dispatched == [] and recorder.runs == []
    # Then nothing adjudicates it by itself
    assert adjudicate_if_automatic(uow, proposal, actor="worker:sweep") is None
    # And a person's recorded runs vote and their adjudication decides
    vote(uow, proposal, ledger.run("anthropic"), choice="dispute", actor="alice", confidence=0.8)
    assert adjudicate(uow, proposal, actor="alice").outcome == "pending"
    vote(uow, proposal, ledger.run("openai"), choice="dispute", actor="bob", confidence=0.8)
    decided = adjudicate(uow, proposal, actor="alice")
    assert (decided.outcome, decided.keep_groups, decided.already_adjudicated) == ("restored", 2, False)
    assert [m.status for m in memory_list(uow, thread=ledger.thread_id).items] == ["stable"]
    # And adjudicating it again says it was decided already
    again = adjudicate(uow, proposal, actor="alice")
    assert (again.outcome, again.already_adjudicated) == ("restored", True)


def test_a_delayed_review_is_dispatched_only_once_the_delay_has_passed(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    names = ("alpha", "beta", "gamma")
    monkeypatch.setenv("COUNCIL_PROFILES", str(local_profiles(tmp_path / "p.toml", NOWHERE, *names)))
    ledger = Ledger.new(engine)
    set_review(uow, ledger.thread_id, "2s", agents=",".join(names), actor=ACTOR)
    consolidation = consolidate(uow, ledger.ready_node(), actor=ACTOR).consolidation_id
    assert consolidation is not None
    propose_retraction(uow, consolidation, reason="doubtful", actor=ACTOR)
    recorder = Recorder()
    assert reverify(uow, recorder).dispatched == []
    time.sleep(2.2)
    assert len(reverify(uow, recorder).dispatched) == 1 and len(recorder.runs) == 3


def test_a_retracted_version_does_not_consolidate_again_on_new_claims(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given a retracted consolidation
    ledger = Ledger.new(engine)
    version, retracted, _ = _retracted(ledger)
    # When fresh independent support arrives on the same version
    _endorse_again(ledger, version)
    result = consolidate(uow, version, actor=ACTOR)
    # Then it is not consolidated again, and the recorded evaluation says why
    assert result.outcome == "not_ready"
    failed = {r.rule: r.detail for r in result.reasons if not r.ok}
    assert list(failed) == ["version_not_retracted"]
    assert str(retracted) in failed["version_not_retracted"]
    # And memory holds the retracted item only, never a stable twin of it
    assert [m.status for m in memory_list(uow, thread=ledger.thread_id).items] == ["retracted"]
    # And the evaluation replays to the same decision and hash
    with unit_of_work(engine) as conn:
        evaluation = row(conn, "consolidation_evaluations", "node_version_id = :v", v=version)["id"]
    assert replay(uow, evaluation).match is True


def test_a_revision_of_a_retracted_version_may_consolidate(engine: Engine, uow: UnitOfWork) -> None:
    ledger = Ledger.new(engine)
    version, _, _ = _retracted(ledger)
    with unit_of_work(engine) as conn:
        node = row(conn, "node_versions", "id = :v", v=version)["logical_node_id"]
    revised = add_version(
        uow,
        NewVersion(logical_node=node, content="SQLite parity suffices for the unit tier only"),
        actor=ACTOR,
    ).version_id
    _endorse_again(ledger, revised)
    assert consolidate(uow, revised, actor=ACTOR).outcome == "committed"


def test_an_explicit_restore_through_adjudication_makes_a_retracted_version_stable_again(
    engine: Engine, uow: UnitOfWork
) -> None:
    ledger = Ledger.new(engine)
    version, consolidation, proposal = _retracted(ledger)
    with pytest.raises(BadInput, match="reason"):
        adjudicate(uow, proposal, actor="alice", restore=True)
    restored = adjudicate(uow, proposal, actor="alice", restore=True, reason="the rerun was misconfigured")
    assert (restored.outcome, restored.restored_retraction) == ("restored", True)
    with unit_of_work(engine) as conn:
        status = row(conn, "consolidations", "id = :v", v=consolidation)["status"]
        node_status = row(conn, "node_version_states", "id = :v", v=version)["status"]
    assert (status, node_status) == ("live", "resolved")
    assert [m.status for m in memory_list(uow, thread=ledger.thread_id).items] == ["stable"]
    assert consolidate(uow, version, actor=ACTOR).outcome == "already_consolidated"
    # A proposal that is not retracted cannot be restored
    with pytest.raises(BadInput, match="only a retracted one"):
        adjudicate(uow, proposal, actor="alice", restore=True, reason="again")


def test_a_consolidated_head_shows_the_decision_that_consolidated_it_not_one_that_contradicts_the_label(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given a consolidated head that a strong independent dispute reached afterwards
    ledger = Ledger.new(engine)
    version = ledger.ready_node("Consolidated, then disputed")
    assert consolidate(uow, version, actor=ACTOR).outcome == "committed"
    ledger.claim(ledger.run("zhipu", agent="glm"), version, "dispute", confidence=0.95)
    # When the governance read shows it
    [decision] = [
        d for d in thread_governance(uow, ledger.thread_id).decisions if d.node_version_id == version
    ]
    # Then it is consolidated with the rules as they held when it consolidated (every one ✓)
    assert decision.consolidated and decision.outcome == "consolidate"
    assert decision.reasons and all(r.ok for r in decision.reasons)
