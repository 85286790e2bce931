"""The sweep finds every kind of unfinished work in the ledger alone (real Postgres):
versions whose claims no evaluation saw, cascade continuations no step took, runs
whose message was lost, reassessments lost between transactions, next rounds never
created, and reviews never adjudicated."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine, text

from council.adapters.scheduler import Recorder
from council.domain.commands import NewVersion
from council.errors import TransientDatabaseError
from council.ledger import cascade as ledger_cascade
from council.ledger.retraction import Retractions
from council.ledger.reversal import Reversal
from council.ledger.runs import Runs
from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate, consolidate_many
from council.services.counterfactual import pin_rule_set
from council.services.dispatch import dispatch
from council.services.execution import execute_run
from council.services.nodes import add_version
from council.services.reversal import change_validity, continue_cascade, reverify
from council.services.sweep import Swept, sweep
from tests.builders import ACTOR, Ledger
from tests.engines import unit_of_work

NOTHING = Swept(runs=[], evaluations=[], cascades=[], reassessed=0, rounds=[], adjudicated=[])


def _unevaluated(uow: UnitOfWork, settle_s: float = 0, limit: int = 100) -> list[UUID]:
    with uow() as tx:
        return tx.unfinished.evaluations(settle_s=settle_s, limit=limit)


def _rows(engine: Engine, sql: str, **params: Any) -> list[Any]:
    with unit_of_work(engine) as conn:
        return list(conn.execute(text(sql), params))


def _gone(*_: Any, **__: Any) -> Any:
    raise TransientDatabaseError("the database went away")


def _work_off(uow: UnitOfWork, recorder: Recorder) -> None:
    """Do what the workers would with everything handed to ``recorder``, until nothing is left."""
    while recorder.runs or recorder.evaluations or recorder.cascades:
        runs, recorder.runs = recorder.runs, []
        for run_id in runs:
            execute_run(uow, recorder, run_id, owner="test")
        evaluations, recorder.evaluations = recorder.evaluations, []
        if evaluations:
            consolidate_many(uow, evaluations, actor=ACTOR)
        cascades, recorder.cascades = recorder.cascades, []
        for continuation_ids in cascades:
            continue_cascade(uow, recorder, continuation_ids)


@pytest.fixture
def simulated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Runs execute here, on the simulated provider."""
    monkeypatch.setenv("COUNCIL_HOME", str(tmp_path))
    monkeypatch.setenv("COUNCIL_OFFLINE", "1")
    monkeypatch.setenv("COUNCIL_SIMULATE", "1")


def test_versions_with_claims_no_evaluation_saw_are_found_and_nothing_else(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given versions in every state an evaluation can leave them in
    ledger = Ledger.new(engine)
    never = ledger.ready_node("ready, never evaluated")
    seen = UUID(str(ledger.node("evaluated after its last claim")["version_id"]))
    ledger.claim(ledger.run("anthropic"), seen, cites=[ledger.evidence[0]])
    assert consolidate(uow, seen, actor=ACTOR).outcome == "not_ready"
    grown = UUID(str(ledger.node("claimed again after its evaluation")["version_id"]))
    ledger.claim(ledger.run("anthropic"), grown, cites=[ledger.evidence[0]])
    assert consolidate(uow, grown, actor=ACTOR).outcome == "not_ready"
    ledger.claim(ledger.run("openai"), grown, cites=[ledger.evidence[1]])
    consolidated = ledger.ready_node("consolidated")
    assert consolidate(uow, consolidated, actor=ACTOR).outcome == "committed"
    ledger.node("no claims at all")
    old = ledger.node("superseded by a new version")
    ledger.claim(ledger.run("anthropic"), UUID(str(old["version_id"])), cites=[ledger.evidence[0]])
    newer = add_version(
        uow, NewVersion(logical_node=old["logical_node_id"], content="a revision"), actor=ACTOR
    )
    # When the sweep looks for evaluations to enqueue
    found = _unevaluated(uow)
    # Then it finds exactly the heads holding a claim no evaluation saw, oldest claim first
    assert found == [never, grown]
    assert newer.version_id not in found  # a head with no claims needs nothing
    # And a limit takes the oldest, and claims younger than the settle time wait
    assert _unevaluated(uow, limit=1) == [never]
    assert _unevaluated(uow, settle_s=3600) == []


def test_once_evaluated_a_version_is_not_found_again_even_when_its_evaluation_repeats(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given a ready node and a lonely one, both found by the sweep
    ledger = Ledger.new(engine)
    ready = ledger.ready_node("ready")
    lonely = UUID(str(ledger.node("lonely")["version_id"]))
    ledger.claim(ledger.run("anthropic"), lonely, cites=[ledger.evidence[0]])
    assert set(_unevaluated(uow)) == {ready, lonely}
    # When both are evaluated, and evaluated again (the idempotent path writes no new row)
    for _ in range(2):
        for version in (ready, lonely):
            consolidate(uow, version, actor=ACTOR)
    # Then the sweep finds neither: it never re-enqueues a version whose claims were all seen
    assert _unevaluated(uow) == []
    evaluations = _rows(
        engine, "SELECT claims_seen FROM consolidation_evaluations WHERE node_version_id = :v", v=lonely
    )
    assert [row.claims_seen for row in evaluations] == [1]


def _cascade_case(engine: Engine, leaves: int) -> tuple[Ledger, list[UUID]]:
    """A consolidated root resting on evidence[0] and [1] (material), one consolidated
    node depending on it, and ``leaves`` consolidated nodes depending on that one,
    each resting on evidence of its own. Returns the ledger and the dependents."""
    ledger = Ledger.new(engine)
    root = ledger.ready_node("root")
    assert consolidate(ledger.uow, root, actor=ACTOR).outcome == "committed"
    own = [ledger.add_evidence("independent a"), ledger.add_evidence("independent b")]
    runs = [ledger.run("anthropic"), ledger.run("openai")]

    def dependent(content: str, on: UUID) -> UUID:
        version = UUID(str(ledger.node(content, depends_on=[on])["version_id"]))
        for run, evidence in zip(runs, own, strict=True):
            ledger.claim(run, version, cites=[evidence])
        assert consolidate(ledger.uow, version, actor=ACTOR).outcome == "committed"
        return version

    middle = dependent("middle", root)
    return ledger, [middle, *(dependent(f"leaf {i}", middle) for i in range(leaves))]


def _memory_statuses(engine: Engine, versions: list[UUID]) -> list[str]:
    rows = _rows(engine, "SELECT status FROM memory_items WHERE node_version_id = ANY(:v)", v=versions)
    return sorted(row.status for row in rows)


def test_a_cut_off_cascade_is_a_row_the_sweep_finds_and_a_step_takes_once(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ledger_cascade, "CASCADE_STEP_LIMIT", 3)
    # Given a contested-to-be root, a node depending on it and six more below that one
    ledger, below = _cascade_case(engine, leaves=6)
    # When its evidence is invalidated with a queue to hand the rest to, and that message is lost
    recorder = Recorder()
    cascade = change_validity(
        uow, recorder, ledger.evidence[0], action="invalidate", reason="forged", actor=ACTOR
    ).cascade
    assert cascade.continuation_queued is True
    [[continuation_id]] = recorder.cascades
    recorder.cascades.clear()
    # Then the cut-off work is in the ledger, unfinished, and the sweep hands it over again
    [row] = _rows(engine, "SELECT continued_at FROM cascade_continuations WHERE id = :i", i=continuation_id)
    assert row.continued_at is None
    swept = sweep(uow, recorder, settle_s=0, runs_settle_s=0)
    assert swept.cascades == [continuation_id] and recorder.cascades == [[continuation_id]]
    # When the swept message and the lost one both arrive (a duplicate)
    first = continue_cascade(uow, Recorder(), [continuation_id])
    again = continue_cascade(uow, Recorder(), [continuation_id])
    # Then only one step took it; the duplicate did nothing
    assert first.reached > 0 and again.reached == 0 and again.continuation_id is None
    # And continuing to the end reaches every dependent, leaving nothing unfinished
    follow = first.continuation_id
    while follow is not None:
        follow = continue_cascade(uow, None, [follow]).continuation_id
    assert _memory_statuses(engine, below) == ["provisional"] * len(below)
    assert _rows(engine, "SELECT id FROM cascade_continuations WHERE continued_at IS NULL") == []


def test_a_cascade_step_that_fails_takes_nothing_and_records_nothing(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ledger_cascade, "CASCADE_STEP_LIMIT", 2)
    # Given a cut-off cascade waiting in the ledger
    ledger, below = _cascade_case(engine, leaves=4)
    recorder = Recorder()
    change_validity(uow, recorder, ledger.evidence[0], action="invalidate", reason="forged", actor=ACTOR)
    [[continuation_id]] = recorder.cascades
    before = _memory_statuses(engine, below)
    # When a step runs and its transaction fails before it commits
    with pytest.raises(RuntimeError, match="database went away"), uow() as tx:
        step = tx.cascades.step([continuation_id], actor=ACTOR)
        assert step.continuation_id is not None
        raise RuntimeError("the database went away")
    # Then the continuation is still unfinished, no new one exists, and no memory moved
    unfinished = _rows(engine, "SELECT id FROM cascade_continuations WHERE continued_at IS NULL")
    assert [row.id for row in unfinished] == [continuation_id]
    assert _memory_statuses(engine, below) == before


def test_the_sweep_hands_over_a_run_whose_message_was_lost(
    engine: Engine, uow: UnitOfWork, simulated: None
) -> None:
    # Given a dispatched run whose message was consumed and lost (it is queued, nothing runs it)
    ledger = Ledger.new(engine)
    lost = Recorder()
    [run_id] = dispatch(
        uow, lost, ledger.thread_id, ["claude"], mode="independent", rounds=1, actor=ACTOR
    ).run_ids
    # When the sweep runs once the run has settled
    recorder = Recorder()
    swept = sweep(uow, recorder, settle_s=0, runs_settle_s=0)
    # Then the run is handed to the scheduler again (the scheduler skips it while a message waits)
    assert recorder.runs == [run_id] and swept.runs == [run_id]
    # And a run still settling is left alone
    assert sweep(uow, Recorder(), settle_s=0, runs_settle_s=3600).runs == []


# ---------------------------------------------- reassessments lost between transactions


def _supported(ledger: Ledger, supporters: int) -> tuple[UUID, UUID]:
    """A node consolidated on ``supporters`` independent endorsements, the i-th citing
    evidence[i] alone (two groups suffice): (its version, its memory item)."""
    version = UUID(str(ledger.node(f"WAL mode is safe, say {supporters}")["version_id"]))
    for i, provider in enumerate(("anthropic", "openai", "zhipu")[:supporters]):
        ledger.claim(ledger.run(provider), version, confidence=0.8, cites=[ledger.evidence[i]])
    committed = consolidate(ledger.uow, version, actor=ACTOR)
    assert committed.outcome == "committed" and committed.memory_item_id is not None
    return version, committed.memory_item_id


@pytest.mark.parametrize(
    ("supporters", "evidence", "action", "status"),
    [
        (2, 0, "invalidate", "contested"),  # material: contested, with a proposal
        (3, 2, "invalidate", "stable"),  # immaterial: stable again, the check recorded
        (3, 0, "challenge", "provisional"),
    ],
    ids=["material-invalidation", "immaterial-invalidation", "challenge"],
)
def test_a_validity_change_whose_reassessment_was_lost_is_reassessed_by_the_sweep(
    engine: Engine,
    uow: UnitOfWork,
    monkeypatch: pytest.MonkeyPatch,
    supporters: int,
    evidence: int,
    action: str,
    status: str,
) -> None:
    # Given a consolidation whose evidence changes validity, and the database goes away
    # between the change's transaction and its reassessment's
    ledger = Ledger.new(engine)
    _, memory_item = _supported(ledger, supporters)
    with monkeypatch.context() as outage, pytest.raises(TransientDatabaseError):
        outage.setattr(Reversal, "reassess", _gone)
        change_validity(
            uow, Recorder(), ledger.evidence[evidence], action=action, reason="doubt", actor=ACTOR
        )
    [changed] = _rows(engine, "SELECT validity FROM evidence WHERE id = :e", e=ledger.evidence[evidence])
    assert changed.validity == f"{action}d"
    [item] = _rows(engine, "SELECT status FROM memory_items WHERE id = :m", m=memory_item)
    assert item.status == "stable"  # the change committed, its reassessment never ran
    # When the sweep runs
    recorder = Recorder()
    swept = sweep(uow, recorder, settle_s=0, runs_settle_s=0)
    # Then it reassessed that consolidation, as the change would have
    assert swept.reassessed == 1
    [item] = _rows(engine, "SELECT status FROM memory_items WHERE id = :m", m=memory_item)
    assert item.status == status
    proposals = _rows(engine, "SELECT status FROM retraction_proposals")
    assert [p.status for p in proposals] == (["open"] if status == "contested" else [])
    moves = _rows(
        engine,
        "SELECT to_status, reason, details FROM memory_transitions WHERE memory_item_id = :m "
        "ORDER BY created_at",
        m=memory_item,
    )
    assert moves and moves[-1].to_status == status
    assert all(move.reason.startswith("sweep: validity changed") for move in moves)
    if action == "invalidate" and status == "stable":
        assert moves[-1].details["check"] == "immaterial"
    # And, what it handed on once done, a second sweep finds nothing
    _work_off(uow, recorder)
    assert sweep(uow, Recorder(), settle_s=0, runs_settle_s=0) == NOTHING
    after = _rows(engine, "SELECT id FROM memory_transitions WHERE memory_item_id = :m", m=memory_item)
    assert len(after) == len(moves)  # and the memory did not move again


def test_memory_re_verified_stable_is_not_reassessed_again_by_the_sweep(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given memory made provisional by a challenge its decision survives, and re-verified stable
    ledger = Ledger.new(engine)
    _, memory_item = _supported(ledger, 3)
    change_validity(uow, None, ledger.evidence[0], action="challenge", reason="doubt", actor=ACTOR)
    [checked] = reverify(uow, Recorder()).reverified
    assert checked.memory_status == "stable"
    # When the sweep runs, its support still challenged
    swept = sweep(uow, Recorder(), settle_s=0, runs_settle_s=0)
    # Then it finds nothing to reassess: the memory stays stable
    assert swept == NOTHING
    [item] = _rows(engine, "SELECT status FROM memory_items WHERE id = :m", m=memory_item)
    assert item.status == "stable"


# --------------------------------------------------------- next rounds never created


def test_a_deliberative_round_whose_next_was_never_created_is_created_by_the_sweep(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, simulated: None
) -> None:
    # Given a two-round deliberation whose first round ran, and the database went away
    # just after the round's last run committed (so its next round was never created)
    ledger = Ledger.new(engine)
    ledger.node("SQLite parity establishes query-semantics equivalence", cites=[ledger.evidence[0]])
    recorder = Recorder()
    dispatched = dispatch(
        uow, recorder, ledger.thread_id, ["claude", "codex"], mode="deliberative", rounds=2, actor=ACTOR
    )
    first, last = dispatched.run_ids
    recorder.runs.clear()
    assert execute_run(uow, recorder, first, owner="test").status == "succeeded"
    with monkeypatch.context() as outage, pytest.raises(TransientDatabaseError):
        outage.setattr(Runs, "next_round", _gone)
        execute_run(uow, recorder, last, owner="test")
    _work_off(uow, recorder)  # the round's evaluations
    rounds = _rows(
        engine, "SELECT round, status FROM agent_runs WHERE dispatch_id = :d", d=dispatched.dispatch_id
    )
    assert sorted((r.round, r.status) for r in rounds) == [(1, "succeeded"), (1, "succeeded")]
    # When the sweep runs
    swept = sweep(uow, recorder, settle_s=0, runs_settle_s=0)
    # Then it created the next round, queued, and handed its runs over; nothing else was unfinished
    second = _rows(
        engine,
        "SELECT id, status, parent_run_id FROM agent_runs WHERE dispatch_id = :d AND round = 2",
        d=dispatched.dispatch_id,
    )
    assert sorted(r.parent_run_id for r in second) == sorted([first, last])
    assert {r.status for r in second} == {"queued"}
    assert swept == Swept(
        runs=[], evaluations=[], cascades=[], reassessed=0, rounds=[dispatched.dispatch_id], adjudicated=[]
    )
    assert sorted(recorder.runs) == sorted(r.id for r in second)
    # And once that round ran, a second sweep finds nothing
    _work_off(uow, recorder)
    assert sweep(uow, Recorder(), settle_s=0, runs_settle_s=0) == NOTHING
    runs = _rows(engine, "SELECT status FROM agent_runs WHERE dispatch_id = :d", d=dispatched.dispatch_id)
    assert [r.status for r in runs] == ["succeeded"] * 4


# ------------------------------------------------------- reviews never adjudicated


def test_a_review_whose_adjudication_was_lost_is_adjudicated_by_the_sweep(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, simulated: None
) -> None:
    # Given a proposal opened by a material invalidation, reviewed by the council, and the
    # database went away just after the review's last run committed (before adjudicating)
    ledger = Ledger.new(engine)
    version = ledger.ready_node()
    assert consolidate(uow, version, actor=ACTOR).outcome == "committed"
    [proposal] = change_validity(
        uow, None, ledger.evidence[0], action="invalidate", reason="fabricated", actor=ACTOR
    ).proposals
    recorder = Recorder()
    *runs, last = dispatch(
        uow,
        recorder,
        ledger.thread_id,
        ["claude", "codex", "glm"],
        mode="review",
        rounds=1,
        actor=ACTOR,
        proposal=proposal,
    ).run_ids
    recorder.runs.clear()
    for run_id in runs:
        assert execute_run(uow, recorder, run_id, owner="test").adjudication is None
    with monkeypatch.context() as outage, pytest.raises(TransientDatabaseError):
        outage.setattr(Retractions, "locked_for_adjudication", _gone)
        execute_run(uow, recorder, last, owner="test")
    [left] = _rows(engine, "SELECT status FROM retraction_proposals WHERE id = :p", p=proposal)
    assert left.status == "open"
    assert len(_rows(engine, "SELECT id FROM retraction_votes WHERE proposal_id = :p", p=proposal)) == 3
    # When the sweep runs
    swept = sweep(uow, recorder, settle_s=0, runs_settle_s=0)
    # Then it adjudicated the proposal (retracted, as the last run would have), and did nothing else
    assert swept == Swept(
        runs=[], evaluations=[], cascades=[], reassessed=0, rounds=[], adjudicated=[proposal]
    )
    [closed] = _rows(engine, "SELECT status FROM retraction_proposals WHERE id = :p", p=proposal)
    assert closed.status == "retracted"
    [memory] = _rows(engine, "SELECT status FROM memory_items WHERE node_version_id = :v", v=version)
    assert memory.status == "retracted"
    # And a second sweep finds nothing
    _work_off(uow, recorder)
    assert sweep(uow, Recorder(), settle_s=0, runs_settle_s=0) == NOTHING
    transitions = _rows(
        engine, "SELECT id FROM retraction_proposal_transitions WHERE proposal_id = :p", p=proposal
    )
    assert len(transitions) == 1


@pytest.mark.parametrize("quorum", [False, True], ids=["round-rule", "quorum-rule"])
def test_a_dispatch_rounds_claims_wait_for_the_round_unless_its_runs_are_evaluated_one_by_one(
    engine: Engine, uow: UnitOfWork, simulated: None, quorum: bool
) -> None:
    # Given an independent dispatch of two runs, one of which has ended with its claims, and
    # evaluation messages that are lost (nothing takes them from the recorder)
    if quorum:  # council-default-v2 reads a quorum: each run's versions are evaluated at its end
        pin_rule_set(uow, "council-default-v2", actor=ACTOR)
    ledger = Ledger.new(engine)
    ledger.node("SQLite parity establishes query-semantics equivalence", cites=[ledger.evidence[0]])
    recorder = Recorder()
    dispatched = dispatch(
        uow, recorder, ledger.thread_id, ["claude", "codex"], mode="independent", rounds=1, actor=ACTOR
    )
    first, last = dispatched.run_ids
    assert execute_run(uow, recorder, first, owner="test").status == "succeeded"
    claimed = {
        r.node_version_id
        for r in _rows(engine, "SELECT node_version_id FROM claims WHERE run_id = :r", r=first)
    }
    assert claimed
    # When the sweep looks for evaluations while the round is open
    # Then a round's claims wait for the round; a quorum thread's are unfinished at once
    assert set(_unevaluated(uow)) == (claimed if quorum else set())
    # And once the round has closed (its closing run's message lost too), they are unfinished
    assert execute_run(uow, recorder, last, owner="test").status == "succeeded"
    found = set(_unevaluated(uow))
    assert claimed <= found <= set(recorder.evaluations)
