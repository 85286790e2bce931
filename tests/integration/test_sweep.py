"""The sweep finds every kind of unfinished work in the ledger alone (real Postgres):
versions whose claims no evaluation saw, cascade continuations no step took, and
runs whose message was lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from council.ledger.unevaluated import unevaluated_versions
from council.services.scheduling import Recorder
from sqlalchemy import Engine, text

from council.ledger import cascade as ledger_cascade
from council.ledger import nodes
from council.ledger.committer import consolidate
from council.ledger.db import unit_of_work
from council.services.reversal import change, continue_cascade
from council.services.runs import dispatch
from council.services.sweep import sweep
from tests.builders import ACTOR, Ledger


def _unevaluated(engine: Engine, settle_s: float = 0, limit: int = 100) -> list[UUID]:
    with unit_of_work(engine) as conn:
        return unevaluated_versions(conn, settle_s=settle_s, limit=limit)


def _rows(engine: Engine, sql: str, **params: Any) -> list[Any]:
    with unit_of_work(engine) as conn:
        return list(conn.execute(text(sql), params))


def test_versions_with_claims_no_evaluation_saw_are_found_and_nothing_else(engine: Engine) -> None:
    # Given versions in every state an evaluation can leave them in
    ledger = Ledger.new(engine)
    never = ledger.ready_node("ready, never evaluated")
    seen = UUID(str(ledger.node("evaluated after its last claim")["version_id"]))
    ledger.claim(ledger.run("anthropic"), seen, cites=[ledger.evidence[0]])
    assert consolidate(engine, seen, actor=ACTOR)["outcome"] == "not_ready"
    grown = UUID(str(ledger.node("claimed again after its evaluation")["version_id"]))
    ledger.claim(ledger.run("anthropic"), grown, cites=[ledger.evidence[0]])
    assert consolidate(engine, grown, actor=ACTOR)["outcome"] == "not_ready"
    ledger.claim(ledger.run("openai"), grown, cites=[ledger.evidence[1]])
    consolidated = ledger.ready_node("consolidated")
    assert consolidate(engine, consolidated, actor=ACTOR)["outcome"] == "committed"
    ledger.node("no claims at all")
    old = ledger.node("superseded by a new version")
    ledger.claim(ledger.run("anthropic"), UUID(str(old["version_id"])), cites=[ledger.evidence[0]])
    newer = nodes.add_version(
        engine, logical_node_id=UUID(str(old["logical_node_id"])), content="a revision", actor=ACTOR
    )
    # When the sweep looks for evaluations to enqueue
    found = _unevaluated(engine)
    # Then it finds exactly the heads holding a claim no evaluation saw, oldest claim first
    assert found == [never, grown]
    assert UUID(str(newer["version_id"])) not in found  # a head with no claims needs nothing
    # And a limit takes the oldest, and claims younger than the settle time wait
    assert _unevaluated(engine, limit=1) == [never]
    assert _unevaluated(engine, settle_s=3600) == []


def test_once_evaluated_a_version_is_not_found_again_even_when_its_evaluation_repeats(engine: Engine) -> None:
    # Given a ready node and a lonely one, both found by the sweep
    ledger = Ledger.new(engine)
    ready = ledger.ready_node("ready")
    lonely = UUID(str(ledger.node("lonely")["version_id"]))
    ledger.claim(ledger.run("anthropic"), lonely, cites=[ledger.evidence[0]])
    assert set(_unevaluated(engine)) == {ready, lonely}
    # When both are evaluated, and evaluated again (the idempotent path writes no new row)
    for _ in range(2):
        for version in (ready, lonely):
            consolidate(engine, version, actor=ACTOR)
    # Then the sweep finds neither: it never re-enqueues a version whose claims were all seen
    assert _unevaluated(engine) == []
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
    assert consolidate(engine, root, actor=ACTOR)["outcome"] == "committed"
    own = [ledger.add_evidence("independent a"), ledger.add_evidence("independent b")]
    runs = [ledger.run("anthropic"), ledger.run("openai")]

    def dependent(content: str, on: UUID) -> UUID:
        version = UUID(str(ledger.node(content, depends_on=[on])["version_id"]))
        for run, evidence in zip(runs, own, strict=True):
            ledger.claim(run, version, cites=[evidence])
        assert consolidate(engine, version, actor=ACTOR)["outcome"] == "committed"
        return version

    middle = dependent("middle", root)
    return ledger, [middle, *(dependent(f"leaf {i}", middle) for i in range(leaves))]


def _memory_statuses(engine: Engine, versions: list[UUID]) -> list[str]:
    rows = _rows(engine, "SELECT status FROM memory_items WHERE node_version_id = ANY(:v)", v=versions)
    return sorted(row.status for row in rows)


def test_a_cut_off_cascade_is_a_row_the_sweep_finds_and_a_step_takes_once(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ledger_cascade, "CASCADE_STEP_LIMIT", 3)
    # Given a contested-to-be root, a node depending on it and six more below that one
    ledger, below = _cascade_case(engine, leaves=6)
    # When its evidence is invalidated with a queue to hand the rest to, and that message is lost
    recorder = Recorder()
    cascade = change(engine, recorder, ledger.evidence[0], action="invalidate", reason="forged", actor=ACTOR)[
        "cascade"
    ]
    assert cascade["continuation_queued"] is True
    [[continuation_id]] = recorder.cascades
    recorder.cascades.clear()
    # Then the cut-off work is in the ledger, unfinished, and the sweep hands it over again
    [row] = _rows(engine, "SELECT continued_at FROM cascade_continuations WHERE id = :i", i=continuation_id)
    assert row.continued_at is None
    swept = sweep(engine, recorder, settle_s=0, runs_settle_s=0)
    assert swept.cascades == [continuation_id] and recorder.cascades == [[continuation_id]]
    # When the swept message and the lost one both arrive (a duplicate)
    first = continue_cascade(engine, Recorder(), [continuation_id])
    again = continue_cascade(engine, Recorder(), [continuation_id])
    # Then only one step took it; the duplicate did nothing
    assert first["reached"] > 0 and again["reached"] == 0 and again["continuation_id"] is None
    # And continuing to the end reaches every dependent, leaving nothing unfinished
    follow = first["continuation_id"]
    while follow is not None:
        follow = continue_cascade(engine, None, [follow])["continuation_id"]
    assert _memory_statuses(engine, below) == ["provisional"] * len(below)
    assert _rows(engine, "SELECT id FROM cascade_continuations WHERE continued_at IS NULL") == []


def test_a_cascade_step_that_fails_takes_nothing_and_records_nothing(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ledger_cascade, "CASCADE_STEP_LIMIT", 2)
    # Given a cut-off cascade waiting in the ledger
    ledger, below = _cascade_case(engine, leaves=4)
    recorder = Recorder()
    change(engine, recorder, ledger.evidence[0], action="invalidate", reason="forged", actor=ACTOR)
    [[continuation_id]] = recorder.cascades
    before = _memory_statuses(engine, below)
    # When a step runs and its transaction fails before it commits
    with pytest.raises(RuntimeError, match="database went away"), unit_of_work(engine) as conn:
        step = ledger_cascade.step(conn, [continuation_id], actor=ACTOR)
        assert step["continuation_id"] is not None
        raise RuntimeError("the database went away")
    # Then the continuation is still unfinished, no new one exists, and no memory moved
    unfinished = _rows(engine, "SELECT id FROM cascade_continuations WHERE continued_at IS NULL")
    assert [row.id for row in unfinished] == [continuation_id]
    assert _memory_statuses(engine, below) == before


def test_the_sweep_hands_over_a_run_whose_message_was_lost(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("COUNCIL_HOME", str(tmp_path))
    monkeypatch.setenv("COUNCIL_OFFLINE", "1")
    monkeypatch.setenv("COUNCIL_SIMULATE", "1")
    # Given a dispatched run whose message was consumed and lost (it is queued, nothing runs it)
    ledger = Ledger.new(engine)
    lost = Recorder()
    [run_id] = dispatch(
        engine, lost, thread_id=ledger.thread_id, agents=["claude"], mode="independent", rounds=1, actor=ACTOR
    )["run_ids"]
    # When the sweep runs once the run has settled
    recorder = Recorder()
    swept = sweep(engine, recorder, settle_s=0, runs_settle_s=0)
    # Then the run is handed to the scheduler again (the scheduler skips it while a message waits)
    assert recorder.runs == [run_id] and swept.runs == [run_id]
    # And a run still settling is left alone
    assert sweep(engine, Recorder(), settle_s=0, runs_settle_s=3600).runs == []
