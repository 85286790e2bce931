"""Exclusive alternatives against real Postgres (docs/architecture.md §4, revision 0040):
options and contradicts edges make one set; under exclusive_alternatives an endorsement of
one alternative counts as a dispute of each rival, support must beat every rival's by the
margin, and no rival may be live; a rival of a consolidated alternative stays open and the
reentry packet shows it as the live counterargument; replay rebuilds such a decision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.domain.agent_output import AgentOutput
from council.services.ask import Question, ask
from council.services.consolidation import consolidate, replay
from council.services.counterfactual import counterfactual
from council.services.reentry import reentry_packet
from council.services.retraction import adjudicate, propose_retraction, vote
from tests.builders import ACTOR, Ledger
from tests.engines import unit_of_work, uow_of
from tests.rivals import endorse_twice, exclusive_ledger, rivals
from tests.rows import counts, row, rows

V3 = "council-default-v3"


def _reasons(result: Any) -> dict[str, Any]:
    return {r.rule: r for r in result.reasons}


# ------------------------------------------------------------------ the rules


def test_the_second_rival_waits_for_the_first_and_the_rival_stays_open_in_the_packet(engine: Engine) -> None:
    # Given X and Y (Y contradicts X), each meeting the rules on its own
    ledger = exclusive_ledger(engine)
    x, y = rivals(ledger)
    # When X is consolidated, then Y is decided
    first = consolidate(ledger.uow, x, actor=ACTOR)
    second = consolidate(ledger.uow, y, actor=ACTOR)
    # Then X is, Y is not: a rival holds a live consolidation, and every other rule holds
    assert first.outcome == "committed"
    assert _reasons(first)["rival_margin"].ok and _reasons(first)["no_live_rival"].ok
    assert "2 run(s) endorsing a rival counted as disputing" in _reasons(first)["no_strong_dispute"].detail
    assert second.outcome == "not_ready"
    assert [r.rule for r in second.reasons if not r.ok] == ["no_live_rival"]
    assert str(first.consolidation_id) in _reasons(second)["no_live_rival"].detail
    # And the derived disputes were never written as claims
    assert {c["claim_type"] for c in rows(engine, "claims", "node_version_id = :v", v=x)} == {"endorse"}
    # And Y stays open: the packet shows it with its consolidated rival, and X's memory names it
    packet = reentry_packet(ledger.uow, str(ledger.thread_id))
    [head] = packet.heads
    assert head.version_id == str(y)
    assert [(r.version_id, r.consolidated) for r in head.rivals] == [(str(x), True)]
    [memory] = packet.memory
    assert memory.node_version_id == str(x) and memory.rivals == [str(y)]
    blind = reentry_packet(ledger.uow, str(ledger.thread_id), blind=True)
    assert blind.heads[0].rivals == head.rivals  # a structural fact, no stance
    from council.domain.reentry_markdown import render_markdown

    text = render_markdown(packet)
    assert "this head is the live counterargument to it" in text
    assert f"live counterargument: rival alternative `{str(y)[:8]}` still open" in text
    # And both decisions replay exactly from the rows they name (format v4)
    with ledger.uow() as tx:
        stored = tx.consolidations.record(first.consolidation_id)[1]["snapshot"]
    assert stored["format"] == "council-snapshot-v4"
    assert [r["version_id"] for r in stored["rivals"]] == [str(y)]
    assert replay(ledger.uow, str(first.consolidation_id)).match
    assert replay(ledger.uow, str(second.evaluation_id)).match


def test_a_confident_independent_rival_endorsement_blocks_as_a_dispute(engine: Engine) -> None:
    # Given X endorsed by two providers, and Y (its rival) endorsed once, confidently (0.7)
    ledger = exclusive_ledger(engine)
    x = UUID(str(ledger.node("three agents hold the verdict")["version_id"]))
    y = UUID(str(ledger.node("the other verdict", edges=[("contradicts", x)])["version_id"]))
    endorse_twice(ledger, x, confidence=0.8, tag="x")
    dissent = ledger.run("zhipu", agent="glm")
    ledger.claim(dissent, y, confidence=0.7, cites=[ledger.add_evidence("the dissent's reading")])
    # When X is decided
    decided = consolidate(ledger.uow, x, actor=ACTOR)
    # Then the dissent counts as an independent dispute above the bar, and X is not consolidated
    assert decided.outcome == "not_ready"
    failed = [r for r in decided.reasons if not r.ok]
    assert [r.rule for r in failed] == ["no_strong_dispute"]
    assert "1 independent dispute group(s) above confidence 0.6" in failed[0].detail
    assert "1 run(s) endorsing a rival counted as disputing" in failed[0].detail
    assert any(g.kind == "dispute" and g.runs == [str(dissent)] for g in decided.groups)


def test_support_must_beat_every_rival_by_the_margin(engine: Engine) -> None:
    # Given a margin of one group, X with three independent supporters and Y with two
    document = {
        "id": "test-margin-v1",
        "description": "margin 1",
        "body": {
            "min_support_groups": 2, "min_support_providers": 2, "dispute_confidence_bar": 0.6,
            "exclusive_alternatives": True, "min_rival_margin": 1,
        },
    }  # fmt: skip
    ledger = exclusive_ledger(engine, document)
    x, y = rivals(ledger)
    # When both are decided: 2 against 2 is no margin
    assert not _reasons(consolidate(ledger.uow, x, actor=ACTOR, dry_run=True))["rival_margin"].ok
    # And a third provider endorses X: 3 against 2 is
    ledger.claim(
        ledger.run("zhipu", agent="glm-x"), x, confidence=0.5, cites=[ledger.add_evidence("x again")]
    )
    decided = consolidate(ledger.uow, x, actor=ACTOR)
    assert decided.outcome == "committed", [r for r in decided.reasons if not r.ok]
    assert "3.00 independent support group(s) against 2.00" in _reasons(decided)["rival_margin"].detail
    assert not _reasons(consolidate(ledger.uow, y, actor=ACTOR, dry_run=True))["rival_margin"].ok


def test_rivals_decided_in_one_batch_consolidate_one(engine: Engine) -> None:
    # Given two rivals that each meet the rules, When one committer transaction decides both
    ledger = exclusive_ledger(engine)
    x, y = rivals(ledger)
    from council.services.consolidation import consolidate_many

    results = consolidate_many(ledger.uow, [y, x], actor=ACTOR)
    # Then the first of the batch is consolidated and the second, decided after it, is not
    assert [r.outcome for r in results] == ["committed", "not_ready"]
    assert [r.rule for r in results[1].reasons if not r.ok] == ["no_live_rival"]


def test_counterfactual_replay_applies_the_same_rules(engine: Engine) -> None:
    # Given the rival Y, not ready because X is live
    ledger = exclusive_ledger(engine)
    x, y = rivals(ledger)
    consolidate(ledger.uow, x, actor=ACTOR)
    waiting = consolidate(ledger.uow, y, actor=ACTOR)
    # When the thread's decisions are decided again without exclusive alternatives
    plain = {"id": "plain-v1", "body": {"min_support_groups": 2, "min_support_providers": 2,
                                       "dispute_confidence_bar": 0.6}}  # fmt: skip
    report = counterfactual(ledger.uow, plain, thread=str(ledger.thread_id))
    # Then Y would have consolidated: the rival rule is what held it
    assert report.reproduced == report.compared
    [changed] = report.changed
    assert changed.id == waiting.evaluation_id and changed.counterfactual_outcome == "consolidate"
    assert "no_live_rival" in changed.rules_changed


# ------------------------------------------------------------------ the writes


def test_ask_options_are_one_set_on_a_thread_pinned_to_v3(engine: Engine) -> None:
    # When a multiple-choice question is asked (simulated agents, nothing run here)
    asked = ask(
        uow_of(engine),
        Recorder(),
        Question(
            text="Which store should the adapter use?",
            agents=("claude", "codex"),
            rounds=1,
            options=("A=SQLite", "B=Postgres", "C = DuckDB"),
        ),
        actor=ACTOR,
        simulate="always",
    )
    # Then the thread is pinned to council-default-v3 and its options are nodes of one set,
    # written with the dispatch, before any run
    assert row(engine, "threads", "id = :v", v=asked.thread_id)["rule_set_id"] == V3
    versions = [row(engine, "node_versions", "id = :v", v=v) for v in asked.options]
    assert [v["content"] for v in versions] == ["A: SQLite", "B: Postgres", "C: DuckDB"]
    [option_set] = rows(engine, "option_sets", "thread_id = :v", v=asked.thread_id)
    assert option_set["origin"] == "ask"
    members = rows(engine, "option_set_members", "option_set_id = :v", v=option_set["id"])
    assert sorted((m["ordinal"], m["label"]) for m in members) == [(0, "A"), (1, "B"), (2, "C")]
    with uow_of(engine)() as tx:
        [alternatives] = tx.graph.of_thread(asked.thread_id).alternative_sets
    assert {m.label for m in alternatives.members} == {"A", "B", "C"}
    # And each option's head shows the other two as its rivals in the agents' (blind) briefing
    packet = reentry_packet(uow_of(engine), str(asked.thread_id), blind=True)
    assert all(len(h.rivals) == 2 for h in packet.heads) and len(packet.heads) == 3


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        (["A=yes", "B"], "invalid --option 'B': expected LABEL=TEXT"),
        (["A=yes", "a=no"], "--option label 'a' is given twice"),
        (["A=yes", "B=  "], "--option 'B' has no text"),
        (["=yes", "B=no"], "invalid --option '=yes': the label must be 1 to 100 characters"),
        (["A=only one"], "a multiple-choice question takes 2 to 100 --option LABEL=TEXT, got 1"),
    ],
)
def test_bad_options_are_refused_with_one_line_and_nothing_written(
    cli: Any, engine: Engine, redis_url: str, options: list[str], reason: str
) -> None:
    before = counts(engine)
    flags = [part for option in options for part in ("--option", option)]
    done = cli(
        "ask", "Which store?", "--agents", "claude", "--simulate", "always", *flags, "--json",
        env={"COUNCIL_BROKER_URL": redis_url},
    )  # fmt: skip
    assert done.code == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and reason in done.stderr
    assert done.json() == {"error": reason, "code": 2}
    assert counts(engine) == before


def test_node_add_contradicts_refuses_an_unknown_or_foreign_version(cli: Any, engine: Engine) -> None:
    ledger = Ledger.new(engine, evidence_items=0)
    mine = str(ledger.node("the adapter passes")["version_id"])
    foreign = str(Ledger.new(engine, title="other", evidence_items=0).node("elsewhere")["version_id"])
    before = counts(engine)
    thread = str(ledger.thread_id)
    for target, reason in (
        ("00000000-0000-4000-8000-00000000dead", "no node version with id"),
        (foreign, "belongs to another thread"),
    ):
        done = cli(
            "node", "add", "--thread", thread, "--content", "it fails", "--contradicts", target, "--json"
        )
        assert done.code == 2 and reason in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert done.json()["code"] == 2
    assert counts(engine) == before
    # And a rival is added with one edge per --contradicts
    done = cli(
        "node", "add", "--thread", thread, "--content", "it fails", "--contradicts", mine[:8], "--json"
    )
    assert done.code == 0, done.stderr
    [edge] = rows(engine, "edges", "from_version_id = :v", v=done.json()["version_id"])
    assert (edge["kind"], str(edge["to_version_id"])) == ("contradicts", mine)


def test_an_edge_joining_two_live_alternatives_is_refused(cli: Any, engine: Engine) -> None:
    # Given two nodes, in no set, each consolidated, on a thread with exclusive alternatives
    ledger = exclusive_ledger(engine)
    x = UUID(str(ledger.node("the adapter passes")["version_id"]))
    y = UUID(str(ledger.node("the adapter is slow")["version_id"]))
    for version, tag in ((x, "x"), (y, "y")):
        endorse_twice(ledger, version, tag=tag)
        assert consolidate(ledger.uow, version, actor=ACTOR).outcome == "committed"
    before = counts(engine)
    # When a new version of X says it contradicts Y
    logical = str(row(engine, "node_versions", "id = :v", v=x)["logical_node_id"])
    done = cli(
        "node", "version", logical, "--content", "the adapter passes, fast", "--edge", f"contradicts:{y}"
    )
    # Then it is refused: the set would hold two live consolidations
    assert done.code == 2, done.stderr
    assert "would join alternatives that each hold a live consolidation" in done.stderr
    assert counts(engine) == before


def test_an_agent_links_existing_versions_as_rivals(engine: Engine) -> None:
    # Given two propositions in other words of different answers, and a run
    ledger = exclusive_ledger(engine)
    x = UUID(str(ledger.node("SQLite is enough")["version_id"]))
    y = UUID(str(ledger.node("Postgres is needed")["version_id"]))
    z = UUID(str(ledger.node("SQLite suffices")["version_id"]))
    run = ledger.run("anthropic")
    output = AgentOutput.model_validate(
        {"edges": [{"node_version_id": str(y), "kind": "contradicts", "to": str(x)},
                   {"node_version_id": str(z), "kind": "refines", "to": str(x)}]}
    )  # fmt: skip
    # When its output links them
    with unit_of_work(engine) as conn:
        run_row = row(conn, "agent_runs", "id = :v", v=run)
    with ledger.uow() as tx:
        applied = tx.outputs.apply(run_row, output, actor=ACTOR)
    # Then both edges are written by the run, and the rivals' decisions are due again
    written = {
        (e["kind"], e["from_version_id"], e["to_version_id"])
        for e in rows(engine, "edges", "created_by_run_id = :v", v=run)
    }
    assert written == {("contradicts", y, x), ("refines", z, x)}
    assert len(applied.edges) == 2 and set(applied.touched_versions) == {x, y}
    # And X and Y are one set; the refinement is no rival
    with ledger.uow() as tx:
        [alternatives] = tx.graph.of_thread(ledger.thread_id).alternative_sets
    nodes = {row(engine, "node_versions", "id = :v", v=v)["logical_node_id"] for v in (x, y)}
    assert {m.logical_node_id for m in alternatives.members} == nodes


def test_a_restore_is_refused_while_a_rival_is_live(engine: Engine) -> None:
    # Given X consolidated, then retracted by two independent votes
    ledger = exclusive_ledger(engine)
    x, y = rivals(ledger)
    committed = consolidate(ledger.uow, x, actor=ACTOR)
    proposal = propose_retraction(ledger.uow, str(committed.consolidation_id), reason="r", actor=ACTOR)
    for provider in ("anthropic", "openai"):
        vote(ledger.uow, str(proposal.id), str(ledger.run(provider, agent=f"{provider}-v")), choice="endorse",
             actor=ACTOR, confidence=0.9)  # fmt: skip
    assert adjudicate(ledger.uow, str(proposal.id), actor=ACTOR).outcome == "retracted"
    # And Y, its rival, consolidated since
    assert consolidate(ledger.uow, y, actor=ACTOR).outcome == "committed"
    # When X's retraction is restored, Then it is refused: two would be live in one set
    from council.errors import BadInput

    with pytest.raises(BadInput, match="of a rival alternative is live"):
        adjudicate(ledger.uow, str(proposal.id), actor=ACTOR, restore=True, reason="it was right")
    live = rows(engine, "consolidations", "status = 'live' AND node_version_id IN (:a, :b)", a=x, b=y)
    assert [c["node_version_id"] for c in live] == [y]


# ------------------------------------------------------------------ rule sets


def test_min_rival_margin_without_exclusive_alternatives_is_refused(
    cli: Any, engine: Engine, tmp_path: Path
) -> None:
    body = {
        "min_support_groups": 2,
        "min_support_providers": 2,
        "dispute_confidence_bar": 0.6,
        "min_rival_margin": 1,
    }
    path = tmp_path / "margin.json"
    path.write_text(json.dumps({"id": "margin-only-v1", "body": body}))
    before = counts(engine)
    for args in (
        ("replay", "--rule-set", str(path)),
        ("eval", "--rule-set", str(path)),
        ("rule-set", "add", str(path)),
    ):
        done = cli(*args, "--json")
        assert done.code == 2, (args, done.stderr)
        assert "min_rival_margin needs exclusive_alternatives true" in done.stderr
    assert counts(engine) == before
    # And a stored one (written behind the ledger's back) is refused where it is named
    from sqlalchemy import text

    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO rule_sets (id, body, body_sha256) VALUES (:id, CAST(:b AS jsonb), :s)"),
            {"id": "margin-stored-v1", "b": json.dumps(body), "s": "0" * 64},
        )
    done = cli("eval", "--rule-set", "margin-stored-v1", "--json")
    assert done.code == 2 and "rule set 'margin-stored-v1': min_rival_margin needs" in done.stderr
