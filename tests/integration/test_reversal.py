"""Governed reversal against real Postgres (docs/architecture.md §5)."""

from __future__ import annotations

import multiprocessing as mp
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine, text

from council.adapters.scheduler import Recorder
from council.domain.commands import NewVersion
from council.domain.results.consolidation import MemoryItem
from council.errors import BadInput
from council.ledger.db import after_fork
from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate, memory_list
from council.services.nodes import add_version, show_node
from council.services.retraction import adjudicate, propose_retraction, vote
from council.services.reversal import change_validity
from tests.builders import ACTOR, Ledger
from tests.engines import engine_for, unit_of_work, uow_of
from tests.rows import insert, row


def _memory(uow: UnitOfWork, consolidation_id: Any) -> MemoryItem:
    items = [m for m in memory_list(uow).items if m.consolidation_id == consolidation_id]
    assert len(items) == 1
    return items[0]


def _consolidated(ledger: Ledger, content: str = "SQLite parity suffices for tests") -> tuple[UUID, Any]:
    version = ledger.ready_node(content)  # endorsed citing evidence[0] and evidence[1]
    result = consolidate(ledger.uow, version, actor=ACTOR)
    assert result.outcome == "committed"
    return version, result.consolidation_id


def _material_case(engine: Engine) -> tuple[Ledger, UUID, Any]:
    """Two independent supporters, each resting on one evidence item: losing
    either leaves one support group, so the decision flips."""
    ledger = Ledger.new(engine)
    version, consolidation = _consolidated(ledger)
    return ledger, version, consolidation


def test_challenge_makes_memory_provisional_and_reaffirm_restores_it(engine: Engine, uow: UnitOfWork) -> None:
    ledger, _, consolidation = _material_case(engine)
    challenged = change_validity(
        uow, None, ledger.evidence[0], action="challenge", reason="method questioned", actor=ACTOR
    )
    assert [a.memory_status for a in challenged.affected] == ["provisional"]
    assert _memory(uow, consolidation).status == "provisional"
    change_validity(uow, None, ledger.evidence[0], action="reaffirm", reason="re-run confirmed", actor=ACTOR)
    history = [(h.from_status, h.to_status) for h in _memory(uow, consolidation).history]
    assert history == [("stable", "provisional"), ("provisional", "stable")]
    with pytest.raises(BadInput):
        change_validity(uow, None, ledger.evidence[0], action="reaffirm", reason="again", actor=ACTOR)


def test_material_invalidation_contests_and_opens_a_proposal(engine: Engine, uow: UnitOfWork) -> None:
    ledger, _, consolidation = _material_case(engine)
    result = change_validity(
        uow, None, ledger.evidence[0], action="invalidate", reason="data was fabricated", actor=ACTOR
    )
    [affected] = result.affected
    assert affected.material is True and affected.memory_status == "contested"
    assert result.proposals == [affected.proposal_id]
    with unit_of_work(engine) as conn:
        proposal = row(conn, "retraction_proposals", "id = :v", v=affected.proposal_id)
    assert proposal["status"] == "open" and proposal["consolidation_id"] == consolidation
    assert (proposal["rule_set_id"], proposal["grouping_algorithm_id"]) == ("council-default-v1", "indep-v1")


def test_immaterial_invalidation_returns_to_stable_with_the_check_recorded(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given a consolidation with three independent supporters (two would suffice)
    ledger = Ledger.new(engine)
    version = UUID(str(ledger.node("WAL mode is safe for readers")["version_id"]))
    for i, provider in enumerate(("anthropic", "openai", "zhipu")):
        ledger.claim(ledger.run(provider), version, confidence=0.8, cites=[ledger.evidence[i]])
    consolidation = consolidate(uow, version, actor=ACTOR).consolidation_id
    # When one supporter's evidence is invalidated
    result = change_validity(
        uow, None, ledger.evidence[2], action="invalidate", reason="stale benchmark", actor=ACTOR
    )
    # Then the decision survives: memory is stable again, with the check recorded
    [affected] = result.affected
    assert affected.material is False and affected.memory_status == "stable"
    history = _memory(uow, consolidation).history
    assert [(h.from_status, h.to_status) for h in history] == [
        ("stable", "provisional"),
        ("provisional", "stable"),
    ]
    assert history[-1].details["check"] == "immaterial"
    assert result.proposals == []


def test_cascade_is_bounded_per_step_and_completed_by_continuations(
    engine: Engine, uow: UnitOfWork, monkeypatch: Any
) -> None:
    from council.ledger import cascade as ledger_cascade

    monkeypatch.setattr(ledger_cascade, "CASCADE_STEP_LIMIT", 4)
    # Given a contested-to-be node with 10 consolidated dependents (depth 1) and 5 more below one of them
    ledger, root, _consolidation = _material_case(engine)
    own = [ledger.evidence[2], ledger.add_evidence("an independent measurement")]  # not the root's evidence
    dependents = []
    for i in range(10):
        dependent = UUID(str(ledger.node(f"dependent {i}", depends_on=[root])["version_id"]))
        for j, provider in enumerate(("anthropic", "openai")):
            ledger.claim(ledger.run(provider), dependent, cites=[own[j]])
        dependents.append(dependent)
    deeper = [
        UUID(str(ledger.node(f"deeper {i}", depends_on=[dependents[0]])["version_id"])) for i in range(5)
    ]
    for version in dependents:
        assert consolidate(uow, version, actor=ACTOR).outcome == "committed"
    # When the root's decisive evidence is invalidated, with a queue to continue on
    recorder = Recorder()
    result = change_validity(
        uow, recorder, ledger.evidence[0], action="invalidate", reason="fabricated", actor=ACTOR
    )
    cascade = result.cascade
    # Then the first step stayed within its bound and queued the rest
    assert cascade.continuation_queued is True and cascade.reached <= 10
    # And continuing the queued steps reaches everything, nothing lost
    from council.services.reversal import continue_cascade

    steps = 1
    while recorder.cascades:
        continuation_ids = recorder.cascades.pop(0)
        continue_cascade(uow, recorder, continuation_ids)
        steps += 1
    assert steps > 2
    statuses = {m.node_version_id: m.status for m in memory_list(uow).items}
    assert all(statuses[v] == "provisional" for v in dependents)
    assert statuses[root] == "contested"
    assert len(deeper) == 5  # reached (no memory of their own to mark)


def _voters(ledger: Ledger, providers: list[str], **kw: Any) -> list[UUID]:
    return [ledger.run(p, agent=f"{p}-reviewer", **kw) for p in providers]


def test_two_independent_endorse_groups_retract_and_reopen_the_node(engine: Engine, uow: UnitOfWork) -> None:
    ledger, version, consolidation = _material_case(engine)
    proposal = propose_retraction(uow, consolidation, reason="the benchmark was misread", actor=ACTOR)
    assert _memory(uow, consolidation).status == "contested"
    for run in _voters(ledger, ["anthropic", "openai"]):
        vote(uow, proposal.id, run, choice="endorse", confidence=0.8, actor=ACTOR)
    outcome = adjudicate(uow, proposal.id, actor=ACTOR)
    assert outcome.outcome == "retracted" and outcome.retract_groups == 2
    assert _memory(uow, consolidation).status == "retracted"
    assert show_node(uow, version).status == "open"
    with unit_of_work(engine) as conn:
        status = row(conn, "consolidations", "id = :v", v=consolidation)["status"]
    assert status == "retracted"
    again = adjudicate(uow, proposal.id, actor=ACTOR)
    assert again.outcome == "retracted" and again.already_adjudicated is True


def test_votes_from_one_inherited_group_do_not_retract(engine: Engine, uow: UnitOfWork) -> None:
    ledger, _, consolidation = _material_case(engine)
    proposal = propose_retraction(uow, consolidation, reason="doubt", actor=ACTOR)
    leader = ledger.run("anthropic", agent="lead")
    follower = ledger.run("openai", agent="follower", exposed_to=[leader])
    for run in (leader, follower):
        vote(uow, proposal.id, run, choice="endorse", confidence=0.9, actor=ACTOR)
    outcome = adjudicate(uow, proposal.id, actor=ACTOR)
    assert outcome.outcome == "pending" and outcome.retract_groups == 1
    assert _memory(uow, consolidation).status == "contested"


def test_two_independent_keep_groups_restore(engine: Engine, uow: UnitOfWork) -> None:
    ledger, _, consolidation = _material_case(engine)
    proposal = propose_retraction(uow, consolidation, reason="doubt", actor=ACTOR)
    for run in _voters(ledger, ["anthropic", "zhipu"]):
        vote(uow, proposal.id, run, choice="dispute", confidence=0.7, actor=ACTOR)
    assert adjudicate(uow, proposal.id, actor=ACTOR).outcome == "restored"
    history = [(h.from_status, h.to_status) for h in _memory(uow, consolidation).history]
    assert history == [("stable", "contested"), ("contested", "stable")]


def test_a_newer_consolidation_makes_the_proposal_superseded(engine: Engine, uow: UnitOfWork) -> None:
    ledger, version, consolidation = _material_case(engine)
    proposal = propose_retraction(uow, consolidation, reason="wording", actor=ACTOR)
    logical = show_node(uow, version).logical_node_id
    newer = add_version(
        uow, NewVersion(logical_node=logical, content="clearer wording"), actor=ACTOR
    ).version_id
    for i, provider in enumerate(("anthropic", "zhipu")):
        ledger.claim(ledger.run(provider), newer, cites=[ledger.evidence[i + 1]])
    assert consolidate(uow, newer, actor=ACTOR).outcome == "committed"
    assert adjudicate(uow, proposal.id, actor=ACTOR).outcome == "superseded"


def test_changing_the_default_grouping_after_opening_does_not_change_adjudication(
    engine: Engine, uow: UnitOfWork, monkeypatch: Any
) -> None:
    # Given a proposal opened under indep-v1, and a later default that links nothing
    ledger, _, consolidation = _material_case(engine)
    proposal = propose_retraction(uow, consolidation, reason="doubt", actor=ACTOR)
    params = {
        "link_parent": False,
        "link_exposure": False,
        "input_jaccard": 2.0,
        "evidence_jaccard": 2.0,
        "evidence_min_shared": 99,
    }
    with unit_of_work(engine) as conn:
        insert(
            conn,
            "grouping_algorithms",
            id="indep-test-unlinked",
            params=params,
            params_sha256="f" * 64,
            description="test",
        )
    monkeypatch.setenv("COUNCIL_GROUPING_ALGORITHM", "indep-test-unlinked")
    leader = ledger.run("anthropic", agent="lead")
    follower = ledger.run("openai", agent="follower", exposed_to=[leader])
    for run in (leader, follower):
        vote(uow, proposal.id, run, choice="endorse", actor=ACTOR)
    # Then the pinned indep-v1 still sees one inherited group
    outcome = adjudicate(uow, proposal.id, actor=ACTOR)
    assert outcome.grouping_algorithm_id == "indep-v1" and outcome.outcome == "pending"


def _adjudicate_in_child(url: str, proposal_id: UUID, barrier: Any, out: Any) -> None:
    after_fork()  # a forked child must not share the parent's pooled connections
    uow = uow_of(engine_for(url, pool_size=1))
    barrier.wait()
    result = adjudicate(uow, proposal_id, actor="racer")
    out.put((result.outcome, result.already_adjudicated))


def test_32_concurrent_adjudications_give_one_outcome(engine: Engine, uow: UnitOfWork, db_url: str) -> None:
    ledger, _, consolidation = _material_case(engine)
    proposal = propose_retraction(uow, consolidation, reason="doubt", actor=ACTOR)
    for run in _voters(ledger, ["anthropic", "openai"]):
        vote(uow, proposal.id, run, choice="endorse", actor=ACTOR)
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(32), ctx.Queue()
    procs = [
        ctx.Process(target=_adjudicate_in_child, args=(db_url, proposal.id, barrier, out)) for _ in range(32)
    ]
    for proc in procs:
        proc.start()
    results = [out.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(30)
    assert {outcome for outcome, _ in results} == {"retracted"}
    assert sum(1 for _, already in results if not already) == 1
    with unit_of_work(engine) as conn:
        closed = conn.execute(text("SELECT count(*) FROM retraction_proposal_transitions")).scalar_one()
        retracted = conn.execute(
            text("SELECT count(*) FROM memory_transitions WHERE to_status = 'retracted'")
        ).scalar_one()
    assert (closed, retracted) == (1, 1)


def test_cli_trail_from_stable_to_retracted(cli: Any, engine: Engine) -> None:
    ledger, _, _consolidation = _material_case(engine)
    invalidated = cli("evidence", "invalidate", str(ledger.evidence[0]), "--reason", "fabricated", "--json")
    assert invalidated.code == 0, invalidated.stderr
    body = invalidated.json()
    [proposal_id] = body["proposals"]
    assert body["cascade"]["continuation_queued"] is False
    for run in _voters(ledger, ["anthropic", "openai"]):
        cast = cli(
            "retraction", "vote", "--proposal", proposal_id, "--run", str(run), "--vote", "endorse", "--json"
        )
        assert cast.code == 0, cast.stderr
    adjudicated = cli("retraction", "adjudicate", "--proposal", proposal_id, "--json").json()
    assert adjudicated["outcome"] == "retracted"
    items = cli("memory", "list", "--status", "retracted", "--json").json()["items"]
    assert [(h["from_status"], h["to_status"]) for h in items[0]["history"]] == [
        ("stable", "contested"),
        ("contested", "retracted"),
    ]
    kinds = [e["kind"] for e in cli("events", "--thread", str(ledger.thread_id), "--json").json()["items"]]
    for kind in (
        "evidence.invalidated",
        "memory.contested",
        "retraction.proposed",
        "retraction.voted",
        "retraction.retracted",
        "memory.retracted",
    ):
        assert kind in kinds
    assert cli("evidence", "invalidate", str(ledger.evidence[0]), "--reason", "again", "--json").code == 2
    assert (
        cli(
            "retraction",
            "vote",
            "--proposal",
            proposal_id,
            "--run",
            str(ledger.run("zhipu")),
            "--vote",
            "maybe",
            "--json",
        ).code
        == 2
    )


def test_an_invalidation_reaching_several_batches_moves_every_consolidation(
    engine: Engine, uow: UnitOfWork, monkeypatch: Any
) -> None:
    from council.services import reversal

    monkeypatch.setattr(reversal, "REASSESS_BATCH", 4)  # 25 consolidations: 7 batches, 2 in flight
    # Given 25 consolidations resting on the same decisive evidence item
    ledger = Ledger.new(engine)
    consolidations = [
        consolidate(uow, ledger.ready_node(f"claim {i} about WAL"), actor=ACTOR).consolidation_id
        for i in range(25)
    ]
    # When it is invalidated
    result = change_validity(
        uow, None, ledger.evidence[0], action="invalidate", reason="fabricated", actor=ACTOR
    )
    # Then every one was reassessed once: contested, each with its own open proposal
    assert sorted(str(a.consolidation_id) for a in result.affected) == sorted(map(str, consolidations))
    assert all(a.memory_status == "contested" for a in result.affected)
    assert len(set(result.proposals)) == 25
    statuses = [m.status for m in memory_list(uow).items]
    assert statuses == ["contested"] * 25
