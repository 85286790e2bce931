"""Control runs (issue 34 part 2) on real Postgres: a deliberative dispatch with controls
pairs each later-round run with a control run of the same profile on the blind briefing,
marked in the ledger (agent_runs.control_of) and in run list / run show, reserved under a
budget, and never counted as support: not in a decision's snapshot (so not in groups,
formation, the rules or n_eff), the quorum's council, the error correlation, the next
round's stances, the independence views, or the stance changes' subjects."""

from __future__ import annotations

import os
from pathlib import Path
from uuid import UUID

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from council.adapters.scheduler import Recorder
from council.agents import gateway
from council.domain.agent_output import AgentOutput, ClaimOut, NewNode, PendingActionOut
from council.errors import BadInput
from council.ledger.unit import UnitOfWork
from council.services import rounds
from council.services.consolidation import groups
from council.services.counterfactual import pin_rule_set
from council.services.dispatch import dispatch, dispatch_runs
from council.services.execution import execute_run
from council.services.learning import stances
from council.services.lists import list_runs, thread_nodes
from tests.builders import ACTOR, Ledger
from tests.dashboard import view_rows
from tests.engines import uow_of
from tests.rows import counts, query

PROFILES = """\
[profiles.claude]
model = "council-sim/claude"
provider = "anthropic"
params = {{ conformity = 0.7, self_revision = {s} }}

[profiles.codex]
model = "council-sim/codex"
provider = "openai"
params = {{ conformity = 0.7, self_revision = {s} }}
"""


@pytest.fixture
def profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "profiles.toml"
    path.write_text(PROFILES.format(s=0.4), encoding="utf-8")
    monkeypatch.setenv("COUNCIL_PROFILES", str(path))
    for name in list(os.environ):
        if name.startswith("COUNCIL_PROFILE_"):
            monkeypatch.delenv(name)
    # Nothing is decided between the rounds, so every head is shown to round 2.
    monkeypatch.setattr(rounds, "consolidate_many", lambda *a, **k: [])


def run_all(uow: UnitOfWork, scheduler: Recorder) -> None:
    done = 0
    while done < len(scheduler.runs):  # a later round is enqueued when the one before ends
        assert execute_run(uow, scheduler, scheduler.runs[done]).status == "succeeded"
        done += 1


def test_control_runs_are_marked_blind_reserved_and_never_counted(engine: Engine, profiles: None) -> None:
    # Given a thread under council-default-v2 (quorum and n_eff rules) with six propositions
    uow, scheduler = uow_of(engine), Recorder()
    pin_rule_set(uow, "council-default-v2", actor=ACTOR)
    ledger = Ledger.new(engine, evidence_items=4)
    for i in range(6):  # each cites an item as it is added (a citation of no run)
        ledger.node(f"Proposition {i}: the cache keeps class {i} warm", cites=[ledger.evidence[i % 4]])
    # When claude and codex deliberate two rounds with controls, under a budget
    made = dispatch(uow, scheduler, ledger.thread_id, ["claude", "codex"], mode="deliberative", rounds=2,
                    actor=ACTOR, controls=True, budget_usd=1)  # fmt: skip
    run_all(uow, scheduler)
    # Then round 2 has a control run for each run, the same agent, parent and round
    runs = dispatch_runs(uow, made.dispatch_id)
    council = [r for r in runs if r.control_of is None]
    controls = {r.control_of: r for r in runs if r.control_of is not None}
    assert made.controls and len(runs) == 6 and len(council) == 4
    assert set(controls) == {r.id for r in council if r.round == 2}
    rows = {r["id"]: r for r in query(engine, "SELECT * FROM agent_runs WHERE dispatch_id = :d",
                                      d=made.dispatch_id)}  # fmt: skip
    for controlled, control in controls.items():
        assert (control.agent, control.round) == (rows[controlled]["agent"], 2)
        assert rows[control.id]["parent_run_id"] == rows[controlled]["parent_run_id"]
        # compiled on the blind briefing: no stance shown, none recorded as exposure
        assert "previous_round" not in rows[control.id]["request"]["messages"][1]["content"]
        assert "previous_round" in rows[controlled]["request"]["messages"][1]["content"]
        assert not query(engine, "SELECT 1 FROM run_exposures WHERE run_id = :r AND kind = 'stance'",
                         r=control.id)  # fmt: skip
    # And the mark is for good: the run guard refuses to change or clear it
    for value in (None, next(r.id for r in council if r.round == 1)):
        with pytest.raises(DBAPIError, match=r"only .* may change"), engine.begin() as conn:
            conn.execute(text("UPDATE agent_runs SET control_of = :v WHERE id = :r"),
                         {"v": value, "r": next(iter(controls.values())).id})  # fmt: skip
    # And the budget reserved each agent's control run too (2 rounds + 1 control)
    assert made.reservation is not None and [a.runs for a in made.reservation.agents] == [3, 3]
    # And the node list and the reentry packet count the council's claims alone
    nodes = {n.version_id: n for n in thread_nodes(uow, ledger.thread_id).items}
    council_claims = query(engine, """
        SELECT c.node_version_id, count(*) AS n FROM claims c JOIN agent_runs r ON r.id = c.run_id
        WHERE r.control_of IS NULL GROUP BY c.node_version_id""")  # fmt: skip
    for row in council_claims:
        shown_node = nodes[row["node_version_id"]]
        assert shown_node.support_claims + shown_node.dispute_claims + shown_node.abstain_claims == row["n"]
    # And run list and run show mark them
    listed = list_runs(uow, thread=ledger.thread_id, dispatch=None, status=None, agent=None, limit=50)
    assert {r.id: r.control_of for r in listed.items if r.control_of} == {
        c.id: k for k, c in controls.items()
    }
    with uow() as tx:
        shown = tx.runs.show(next(iter(controls.values())).id)
    assert shown.control_of in controls
    # And no control claim is counted: not in any version's snapshot, groups or quorum council
    control_ids = {c.id for c in controls.values()}
    claimed = query(engine, "SELECT DISTINCT node_version_id FROM claims WHERE run_id = ANY(:r)",
                    r=list(control_ids))  # fmt: skip
    assert claimed
    for row in claimed:
        version = row["node_version_id"]
        with uow() as tx:
            snapshot = tx.consolidations.current_snapshot(version)
        assert not {UUID(c["run_id"]) for c in snapshot["claims"]} & control_ids
        assert not {UUID(r["id"]) for r in snapshot["runs"]} & control_ids
        assert not {UUID(c["run_id"]) for c in snapshot["citations"] if c["run_id"]} & control_ids
        assert any(c["run_id"] is None for c in snapshot["citations"])  # the node's own stays
        assert not {UUID(s["run_id"]) for s in snapshot["council"]} & control_ids
        found = groups(uow, version)
        assert not {UUID(r) for g in found.groups for r in g.runs} & control_ids
        seen = view_rows(engine, "council_v_independence_members", node_version_id=version)
        assert seen and not {r["run_id"] for r in seen} & control_ids
    # And they are not the stance changes' subjects; each round-2 claim reads its control's
    changes = stances(uow, ledger.thread_id).changes
    assert not {c.run_id for c in changes} & control_ids
    round_two = [c for c in changes if c.round == 2]
    assert round_two and all(c.control_run_id in control_ids for c in round_two)
    assert any(c.change_class == "self_revision" for c in round_two)
    # And the view classifies each exactly as the domain does (with its control beside it)
    viewed = query(engine, "SELECT claim_id, change_class FROM council_v_stance_changes WHERE thread_id = :t",
                   t=ledger.thread_id)  # fmt: skip
    assert {r["claim_id"]: r["change_class"] for r in viewed} == {c.claim_id: c.change_class for c in changes}


def test_controls_need_a_deliberative_dispatch_and_nothing_is_written(engine: Engine, profiles: None) -> None:
    ledger = Ledger.new(engine)
    ledger.node("A proposition")
    before = counts(engine)
    for mode in ("independent", "review"):
        with pytest.raises(BadInput, match="--controls needs --mode deliberative or council"):
            dispatch(uow_of(engine), Recorder(), ledger.thread_id, ["claude"], mode=mode, rounds=1,
                     actor=ACTOR, controls=True)  # fmt: skip
    assert counts(engine) == before


def test_a_council_pairs_only_its_deliberative_rounds_with_controls(engine: Engine, profiles: None) -> None:
    # Given a council dispatch with controls: its proposing and cross-review rounds are blind
    uow, scheduler = uow_of(engine), Recorder()
    ledger = Ledger.new(engine, evidence_items=1)
    made = dispatch(uow, scheduler, ledger.thread_id, ["claude", "codex"], mode="council", rounds=1,
                    actor=ACTOR, controls=True, budget_usd=1)  # fmt: skip
    run_all(uow, scheduler)
    # Then only round 3, the one shown stances, has a control run for each run, reserved with them
    runs = dispatch_runs(uow, made.dispatch_id)
    controls = [r for r in runs if r.control_of is not None]
    assert made.rounds == 3 and made.controls and len(runs) == 8
    assert {r.round for r in controls} == {3} and len(controls) == 2
    assert made.reservation is not None and sum(a.runs for a in made.reservation.agents) == 8


def test_without_controls_a_deliberative_dispatch_makes_none(engine: Engine, profiles: None) -> None:
    uow, scheduler = uow_of(engine), Recorder()
    ledger = Ledger.new(engine)
    ledger.node("A proposition")
    made = dispatch(uow, scheduler, ledger.thread_id, ["claude", "codex"], mode="deliberative", rounds=3,
                    actor=ACTOR)  # fmt: skip
    run_all(uow, scheduler)
    runs = dispatch_runs(uow, made.dispatch_id)
    assert not made.controls and len(runs) == 6 and all(r.control_of is None for r in runs)
    assert all(c.change_class != "self_revision" for c in stances(uow, ledger.thread_id).changes)


def test_a_control_runs_claims_on_existing_versions_are_all_it_adds(
    engine: Engine, profiles: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a deliberative dispatch with controls whose first round has run
    uow, scheduler = uow_of(engine), Recorder()
    ledger = Ledger.new(engine, evidence_items=1)
    version = str(ledger.node("Proposition: the cache keeps its class warm")["version_id"])
    made = dispatch(uow, scheduler, ledger.thread_id, ["claude"], mode="deliberative", rounds=2,
                    actor=ACTOR, controls=True)  # fmt: skip
    assert execute_run(uow, scheduler, scheduler.runs[0]).status == "succeeded"
    [control] = [r for r in dispatch_runs(uow, made.dispatch_id) if r.control_of is not None]
    # When the control's model answers as a council member might: a claim on the version it
    # was shown, and a new proposition with its own claim and a pending action
    answer = AgentOutput(
        summary="[test] a control that proposes more",
        claims=[
            ClaimOut(node_version_id=version, type="dispute", confidence=0.6),
            ClaimOut(node_version_id="ref:n1", type="endorse", confidence=0.9),
        ],
        new_nodes=[NewNode(ref="n1", content="A proposition of the control's own")],
        pending_actions=[PendingActionOut(description="measure it", acceptance_condition="a number")],
    ).model_dump_json()
    monkeypatch.setattr(
        gateway,
        "complete",
        lambda model, *a, **k: gateway.Completion(answer, {"prompt_tokens": 1}, None, model, True),
    )
    before = counts(engine)
    assert execute_run(uow, scheduler, control.id).status == "succeeded"
    # Then its claim on the existing version is recorded, and nothing else reaches the graph
    claims = query(engine, "SELECT node_version_id, claim_type FROM claims WHERE run_id = :r", r=control.id)
    assert [(str(c["node_version_id"]), c["claim_type"]) for c in claims] == [(version, "dispute")]
    after = counts(engine)
    assert (after["logical_nodes"], after["pending_actions"]) == (
        before["logical_nodes"],
        before["pending_actions"],
    )
    # And its event says what was left out; its whole answer is kept
    [applied] = query(engine, "SELECT payload FROM events WHERE kind = :k AND subject_id = :r",
                      k="run.output_applied", r=str(control.id))  # fmt: skip
    assert applied["payload"]["control_left_out"] == {"new_nodes": 1, "pending_actions": 1, "claims": 1}
    kept = query(engine, """SELECT t.body FROM run_answers a JOIN answer_texts t ON t.sha256 = a.answer_sha256
                            WHERE a.run_id = :r""", r=control.id)  # fmt: skip
    assert [k["body"] for k in kept] == [answer]
