"""Consolidation scenarios against real Postgres (docs/architecture.md §4, invariants 5-9)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.domain.commands import NewAction, NewFork, NewVersion
from council.domain.results.consolidation import Evaluated
from council.errors import NotFound
from council.ledger.unit import UnitOfWork
from council.services.branches import close_branch, fork_branch, merge_branch
from council.services.claims import add_action, close_action
from council.services.consolidation import consolidate, consolidate_many, groups, history, memory_list, replay
from council.services.nodes import add_version, set_node_status, show_node
from tests.builders import ACTOR, Ledger, alter_claims_behind_the_ledgers_back
from tests.engines import unit_of_work, uow_of
from tests.rows import count, insert, query, row, rows


def _run(engine: Engine, version_id: UUID, **kw: Any) -> Evaluated:
    return consolidate(uow_of(engine), version_id, actor=ACTOR, **kw)


def _failed(result: Evaluated) -> set[str]:
    return {r.rule for r in result.reasons if not r.ok}


def _replays(engine: Engine, record_id: UUID | None) -> bool:
    assert record_id is not None
    return replay(uow_of(engine), record_id).match


def _new_version(engine: Engine, old: UUID, content: str) -> UUID:
    """A new version of the logical node of ``old``."""
    uow = uow_of(engine)
    logical = show_node(uow, old).logical_node_id
    return add_version(uow, NewVersion(logical_node=logical, content=content), actor=ACTOR).version_id


def test_ready_node_commits_once_with_memory_event_and_evidence_index(engine: Engine) -> None:
    # Given a node with two independent endorsements from two providers
    ledger = Ledger.new(engine)
    version_id = ledger.ready_node()
    # When it is consolidated twice
    first = _run(engine, version_id)
    second = _run(engine, version_id)
    # Then it commits once and the second call returns the same consolidation
    assert first.outcome == "committed" and first.decision == "consolidate"
    assert second.outcome == "already_consolidated"
    assert second.consolidation_id == first.consolidation_id
    assert count(engine, "consolidations") == 1
    # And the memory item is stable, the node resolved, the evidence indexed, an event logged
    memory = memory_list(uow_of(engine), status="stable").items
    assert [m.consolidation_id for m in memory] == [first.consolidation_id]
    with unit_of_work(engine) as conn:
        status = row(conn, "node_version_states", "id = :v", v=version_id)["status"]
        indexed = {
            r["evidence_id"]
            for r in rows(conn, "consolidation_evidence", "consolidation_id = :id", id=first.consolidation_id)
        }
        kinds = [r["kind"] for r in query(conn, "SELECT kind FROM events ORDER BY id")]
    assert status == "resolved"
    assert indexed == {ledger.evidence[0], ledger.evidence[1]}
    assert kinds.count("consolidation.committed") == 1
    assert _replays(engine, first.consolidation_id) is True


def test_not_ready_is_recorded_once_with_reasons(engine: Engine) -> None:
    ledger = Ledger.new(engine)
    version_id = UUID(str(ledger.node()["version_id"]))
    ledger.claim(ledger.run("anthropic"), version_id, cites=[ledger.evidence[0]])
    first = _run(engine, version_id)
    again = _run(engine, version_id)
    assert first.outcome == again.outcome == "not_ready"
    assert _failed(first) == {"independent_support", "provider_diversity"}
    assert again.evaluation_id == first.evaluation_id
    assert count(engine, "consolidation_evaluations") == 1
    assert _replays(engine, first.evaluation_id) is True
    assert [e.id for e in history(uow_of(engine), version_id).evaluations] == [first.evaluation_id]


def test_same_provider_under_two_personas_is_not_provider_diverse(engine: Engine) -> None:
    ledger = Ledger.new(engine)
    version_id = UUID(str(ledger.node()["version_id"]))
    for i, agent in enumerate(("claude-optimist", "claude-skeptic")):
        ledger.claim(ledger.run("anthropic", agent=agent), version_id, cites=[ledger.evidence[i]])
    result = _run(engine, version_id)
    assert result.outcome == "not_ready"
    assert _failed(result) == {"provider_diversity"}


def test_exposure_merges_support_into_one_group(engine: Engine) -> None:
    ledger = Ledger.new(engine)
    version_id = UUID(str(ledger.node()["version_id"]))
    first = ledger.run("anthropic")
    ledger.claim(first, version_id, cites=[ledger.evidence[0]])
    follower = ledger.run("openai", exposed_to=[first])
    ledger.claim(follower, version_id, cites=[ledger.evidence[1]])
    found = groups(uow_of(engine), version_id)
    assert found.support_groups == 1
    assert sorted(found.groups[0].runs) == sorted([str(first), str(follower)])
    assert _failed(_run(engine, version_id)) == {"independent_support", "provider_diversity"}


def test_strong_independent_dispute_blocks_and_weak_does_not(engine: Engine) -> None:
    ledger = Ledger.new(engine)
    weak = ledger.ready_node("weakly disputed")
    ledger.claim(ledger.run("zhipu"), weak, claim_type="dispute", confidence=0.4)
    strong = ledger.ready_node("strongly disputed")
    ledger.claim(ledger.run("zhipu"), strong, claim_type="dispute", confidence=0.9, rationale="tail latency")
    assert _run(engine, weak).outcome == "committed"
    assert _failed(_run(engine, strong)) == {"no_strong_dispute"}


def test_open_objective_fork_outranks_node_agreement(engine: Engine) -> None:
    ledger = Ledger.new(engine)
    version_id = ledger.ready_node()
    fork = fork_branch(
        uow_of(engine),
        NewFork(
            thread=ledger.thread_id,
            kind="objective",
            label="scope",
            divergence_type="objective",
            objective="Only single-node deployments?",
        ),
        actor=ACTOR,
    )
    assert _failed(_run(engine, version_id)) == {"no_open_objective_fork"}
    close_branch(uow_of(engine), fork.id, status="killed", reason="out of scope", actor=ACTOR)
    assert _run(engine, version_id).outcome == "committed"


def test_challenged_support_evidence_blocks(engine: Engine) -> None:
    ledger = Ledger.new(engine)
    version_id = ledger.ready_node()
    with unit_of_work(engine) as conn:
        insert(
            conn,
            "evidence_transitions",
            evidence_id=ledger.evidence[0],
            from_status="valid",
            to_status="challenged",
            reason="r",
            actor=ACTOR,
        )
    result = _run(engine, version_id)
    assert _failed(result) == {"support_evidence_sound"}


def test_unmet_pending_action_blocks_until_satisfied(engine: Engine) -> None:
    ledger = Ledger.new(engine)
    version_id = ledger.ready_node()
    action = add_action(
        uow_of(engine),
        NewAction(
            thread=ledger.thread_id,
            description="run the adapter suite on Postgres",
            acceptance_condition="suite green on PG 16",
            version=version_id,
        ),
        actor=ACTOR,
    )
    assert _failed(_run(engine, version_id)) == {"pending_actions_met"}
    close_action(uow_of(engine), action.id, status="satisfied", reason="green", actor=ACTOR)
    assert _run(engine, version_id).outcome == "committed"


def test_unmerged_branch_does_not_consolidate_until_merged(engine: Engine) -> None:
    ledger = Ledger.new(engine)
    root = UUID(str(ledger.node("root")["version_id"]))
    fork = fork_branch(
        uow_of(engine),
        NewFork(thread=ledger.thread_id, kind="node", label="alt", divergence_type="claim", at_version=root),
        actor=ACTOR,
    )
    version_id = UUID(str(ledger.node("alternative reading", branch_id=fork.id)["version_id"]))
    for i, provider in enumerate(("anthropic", "openai")):
        ledger.claim(ledger.run(provider), version_id, cites=[ledger.evidence[i]])
    assert _failed(_run(engine, version_id)) == {"mainline_or_merged"}
    merge_branch(uow_of(engine), fork.id, rationale="reconciled", actor=ACTOR)
    assert _run(engine, version_id).outcome == "committed"


def test_killed_or_old_version_does_not_consolidate(engine: Engine) -> None:
    ledger = Ledger.new(engine)
    killed = ledger.ready_node("killed one")
    set_node_status(uow_of(engine), killed, status="killed", reason="wrong", actor=ACTOR)
    assert _failed(_run(engine, killed)) == {"node_is_open_head"}
    old = ledger.ready_node("old wording")
    _new_version(engine, old, "new wording")
    assert _failed(_run(engine, old)) == {"node_is_open_head"}


def test_newer_version_supersedes_in_one_transaction(engine: Engine) -> None:
    ledger = Ledger.new(engine)
    v1 = ledger.ready_node("v1")
    first = _run(engine, v1)
    v2 = _new_version(engine, v1, "v2")
    for i, provider in enumerate(("anthropic", "zhipu")):
        ledger.claim(ledger.run(provider), v2, cites=[ledger.evidence[i + 1]])
    second = _run(engine, v2)
    assert second.outcome == "committed"
    assert second.superseded_consolidation_id == first.consolidation_id
    with unit_of_work(engine) as conn:
        states = {r["id"]: r["status"] for r in rows(conn, "consolidations")}
        memory = {r["consolidation_id"]: r["status"] for r in rows(conn, "memory_items")}
    assert states == {first.consolidation_id: "superseded", second.consolidation_id: "live"}
    assert memory == {first.consolidation_id: "superseded", second.consolidation_id: "stable"}
    assert memory_list(uow_of(engine), status="superseded").items[0].history[0].to_status == "superseded"
    for consolidation_id in states:
        assert _replays(engine, consolidation_id) is True


def test_dry_run_writes_nothing(engine: Engine) -> None:
    ledger = Ledger.new(engine)
    version_id = ledger.ready_node()
    with unit_of_work(engine) as conn:
        events_before = count(conn, "events")
    result = _run(engine, version_id, dry_run=True)
    assert result.outcome == "would_commit" and result.dry_run is True
    assert count(engine, "consolidations") == 0 and count(engine, "consolidation_evaluations") == 0
    assert count(engine, "events") == events_before


def test_replay_detects_an_altered_claim(engine: Engine, owner_engine: Engine) -> None:
    # Given a committed consolidation
    ledger = Ledger.new(engine)
    version_id = ledger.ready_node()
    committed = _run(engine, version_id)
    assert _replays(engine, committed.consolidation_id) is True
    # When a stored claim is altered behind the ledger's back (by the owner, trigger disabled)
    alter_claims_behind_the_ledgers_back(owner_engine, version_id, confidence=0.1)
    # Then replay reports the mismatch
    assert committed.consolidation_id is not None
    result = replay(uow_of(engine), committed.consolidation_id)
    assert result.match is False and result.hash_match is False
    assert result.differences == ["claims"]


def test_groups_cli_contract(cli: Any, engine: Engine) -> None:
    ledger = Ledger.new(engine)
    version_id = ledger.ready_node()
    ledger.claim(ledger.run("zhipu"), version_id, claim_type="dispute", confidence=0.3)
    result = cli("groups", "--node", str(version_id), "--json")
    assert result.code == 0, result.stderr
    found = result.json()["groups"]
    assert sorted(g["kind"] for g in found) == ["dispute", "support", "support"]
    assert all(isinstance(g["runs"], list) and g["runs"] for g in found)
    committed = cli("consolidate", "--node", str(version_id), "--json").json()
    assert committed["outcome"] == "committed" and committed["consolidation_id"]
    again = cli("consolidate", "--node", str(version_id), "--json").json()
    assert again["outcome"] == "already_consolidated"
    assert again["consolidation_id"] == committed["consolidation_id"]
    replayed = cli("replay", committed["consolidation_id"], "--json").json()
    assert replayed["match"] is True and replayed["snapshot_sha256"]
    items = cli("memory", "list", "--status", "stable", "--json").json()["items"]
    assert [i["status"] for i in items] == ["stable"]
    unknown = "00000000-0000-4000-8000-000000000000"
    bad = cli("consolidate", "--node", unknown, "--json")
    # Bad input: no result, only the error document on stdout (the one-line reason also on stderr)
    assert bad.code == 2 and bad.json() == {"error": f"no node version with id {unknown}", "code": 2}
    assert bad.stderr.strip() == f"error: no node version with id {unknown}"
    assert cli("memory", "list", "--status", "great", "--json").code == 2


def test_consolidating_an_unknown_version_is_bad_input_and_writes_nothing(engine: Engine) -> None:
    with pytest.raises(NotFound):
        _run(engine, UUID("00000000-0000-4000-8000-000000000000"))
    assert count(engine, "consolidation_evaluations") == 0 and count(engine, "events") == 0


# ------------------------------------------------------------------ batches


def test_a_batch_decides_each_version_as_it_would_be_decided_alone(engine: Engine) -> None:
    # Given, on one thread: two ready nodes, one already consolidated, one with a
    # single endorsement, and a consolidated node with a newer ready version
    ledger = Ledger.new(engine, evidence_items=3)
    ready = [ledger.ready_node(f"ready {i}") for i in range(2)]
    done = ledger.ready_node("done")
    already = _run(engine, done)
    lonely = UUID(str(ledger.node("lonely")["version_id"]))
    ledger.claim(ledger.run("anthropic"), lonely, confidence=0.8, cites=[ledger.evidence[0]])
    old = ledger.ready_node("old")
    old_result = _run(engine, old)
    new = _new_version(engine, old, "new")
    for i, provider in enumerate(("anthropic", "zhipu")):
        ledger.claim(ledger.run(provider), new, cites=[ledger.evidence[i + 1]])
    # When they are consolidated in one batch, with a repeat and the old version too
    batch = [ready[0], done, lonely, new, ready[1], ready[0], old]
    results = consolidate_many(uow_of(engine), batch, actor=ACTOR)
    # Then there is one answer per id, in order, each what a lone committer gives
    assert [r.node_version_id for r in results] == batch
    outcomes = [r.outcome for r in results]
    assert outcomes == [
        "committed",
        "already_consolidated",
        "not_ready",
        "committed",
        "committed",
        "committed",
        "not_ready",
    ]
    assert results[0] == results[5]
    assert results[1].consolidation_id == already.consolidation_id
    assert "independent_support" in _failed(results[2])
    assert results[3].superseded_consolidation_id == old_result.consolidation_id
    # And the old version, decided after the new one in the same transaction, no longer can
    assert results[6].consolidation_id is None
    # And the ledger holds exactly one live consolidation per logical node, each replaying
    with unit_of_work(engine) as conn:
        live = [
            (r["logical_node_id"], r["n"])
            for r in query(
                conn,
                "SELECT logical_node_id, count(*) AS n FROM consolidations WHERE status = 'live'"
                " GROUP BY logical_node_id",
            )
        ]
        every = [r["id"] for r in rows(conn, "consolidations")]
        evaluations = [r["id"] for r in rows(conn, "consolidation_evaluations")]
    assert len(live) == 4 and all(n == 1 for _, n in live)
    for row_id in [*every, *evaluations]:
        assert _replays(engine, row_id) is True
    # And deciding the same batch again writes nothing new
    again = consolidate_many(uow_of(engine), batch, actor=ACTOR)
    assert [r.outcome for r in again] == [
        "already_consolidated",
        "already_consolidated",
        "not_ready",
        "already_consolidated",
        "already_consolidated",
        "already_consolidated",
        "not_ready",
    ]
    assert count(engine, "consolidations") == len(every)
    assert count(engine, "consolidation_evaluations") == len(evaluations)


def test_a_batch_naming_an_unknown_version_writes_nothing(engine: Engine) -> None:
    ledger = Ledger.new(engine)
    ready = ledger.ready_node()
    unknown = UUID("00000000-0000-4000-8000-000000000000")
    with unit_of_work(engine) as conn:
        events_before = count(conn, "events")
    with pytest.raises(NotFound, match=str(unknown)):
        consolidate_many(uow_of(engine), [ready, unknown], actor=ACTOR)
    assert count(engine, "consolidations") == 0 and count(engine, "consolidation_evaluations") == 0
    assert count(engine, "events") == events_before


def test_a_dry_run_batch_writes_nothing(engine: Engine) -> None:
    ledger = Ledger.new(engine)
    ready = ledger.ready_node()
    lonely = UUID(str(ledger.node("lonely")["version_id"]))
    results = consolidate_many(uow_of(engine), [ready, lonely], actor=ACTOR, dry_run=True)
    assert [r.outcome for r in results] == ["would_commit", "not_ready"]
    assert all(r.dry_run for r in results)
    assert count(engine, "consolidations") == 0 and count(engine, "consolidation_evaluations") == 0


def test_a_batch_closes_when_its_claims_reach_the_transaction_budget(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from council.ledger import committer
    from council.services import consolidation

    # Given five ready nodes of two claims each, and a budget of four claims a transaction
    ledger = Ledger.new(engine)
    ready = [ledger.ready_node(f"ready {i}") for i in range(5)]
    monkeypatch.setattr(consolidation, "CLAIMS_PER_TRANSACTION", 4)
    sizes: list[int] = []
    real = committer._consolidate_batch

    def counted(conn: Any, version_ids: list[UUID], **kw: Any) -> list[dict[str, Any]]:
        sizes.append(len(version_ids))
        return real(conn, version_ids, **kw)

    monkeypatch.setattr(committer, "_consolidate_batch", counted)
    # When they are consolidated in one call
    results = consolidate_many(uow_of(engine), ready, actor=ACTOR)
    # Then they went in transactions of two, two and one, each committed
    assert sizes == [2, 2, 1]
    assert [r.outcome for r in results] == ["committed"] * 5


def test_batches_are_planned_by_weight_light_nodes_together_heavy_ones_alone(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from council.services import consolidation

    # Given four lightly claimed nodes and one with many claims, a budget of 10
    # claims a transaction and at most three versions a message
    ledger = Ledger.new(engine)
    light = [ledger.ready_node(f"light {i}") for i in range(4)]
    heavy = UUID(str(ledger.node("heavy")["version_id"]))
    for _ in range(12):
        ledger.claim(ledger.run("anthropic"), heavy, confidence=0.5)
    monkeypatch.setattr(consolidation, "CLAIMS_PER_TRANSACTION", 10)
    # When the commit queue plans its messages
    planned = consolidation.plan_batches(
        uow_of(engine), [*light[:2], heavy, *light[2:], light[0]], max_versions=3
    )
    # Then light nodes share messages up to the version cap, the heavy one goes alone
    assert planned == [light[:2], [heavy], light[2:]]
    # and one version (what most runs touch) is one message, planned without a transaction
    monkeypatch.setattr(UnitOfWork, "__call__", None)
    assert consolidation.plan_batches(uow_of(engine), [heavy, heavy], max_versions=3) == [[heavy]]
    assert consolidation.plan_batches(uow_of(engine), [], max_versions=3) == []
