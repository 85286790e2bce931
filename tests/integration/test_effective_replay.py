"""council-default-v2 decides with the error-correlation table measured when the decision
was made (snapshot v3): replay rebuilds that table from the manifest, so a decision made
under v2 replays exactly after later resolutions changed the live table."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Engine

from council.ledger.snapshots import current_snapshot
from council.services.consolidation import consolidate, groups, history, replay
from council.services.counterfactual import pin_rule_set
from council.services.export_record import decision_record
from council.services.observation import resolve
from council.services.outside import node_status
from tests.builders import ACTOR, MODELS, Ledger

PAIR = sorted([MODELS["anthropic"], MODELS["openai"]])


def endorsed(ledger: Ledger, content: str) -> UUID:
    """A node endorsed by one independent run of each of the two providers."""
    version_id = UUID(str(ledger.node(content)["version_id"]))
    for provider in ("anthropic", "openai"):
        evidence = ledger.add_evidence(f"{provider} evidence for {content}")
        ledger.claim(ledger.run(provider), version_id, confidence=0.8, cites=[evidence])
    return version_id


def used(snapshot: Any) -> float:
    [pair] = [p for p in snapshot["correlations"] if p["models"] == PAIR]
    return float(pair["used"])


def test_a_v2_consolidation_replays_exactly_after_resolutions_change_the_live_table(engine: Engine) -> None:
    # Given new threads pinned to council-default-v2, and a node two providers endorse
    pin_rule_set(Ledger.new(engine, title="pin").uow, "council-default-v2", actor=ACTOR)
    ledger = Ledger.new(engine)
    first = endorsed(ledger, "the adapter passes the parity suite")
    # When it is consolidated with no resolved history: the pair is at the prior across families (0.3)
    committed = consolidate(ledger.uow, first, actor=ACTOR)
    assert committed.outcome == "committed"
    with ledger.uow() as tx:
        stored = tx.consolidations.record(committed.consolidation_id)[1]["snapshot"]
    assert stored["format"] == "council-snapshot-v3"
    assert used(stored) == 0.3
    assert {r["model"] for r in stored["runs"]} == set(PAIR)
    assert stored["council"] == []  # runs recorded by hand: no dispatch sent a council
    # And later the two models turn out to err together on six resolved nodes
    for i in range(6):
        past = endorsed(ledger, f"resolved claim {i}")
        resolve(
            ledger.uow,
            str(past),
            outcome="false" if i % 2 else "true",
            source="test",
            reason="r",
            actor=ACTOR,
        )
    with ledger.uow() as tx:
        live = current_snapshot(tx.conn, first)
    # Then the live table has moved (6 of 30 records measured at 1.0: 0.2 * 1 + 0.8 * 0.3)
    assert used(live) == 0.44
    # And a node decided now falls short of n_eff 1.5, naming the value
    later = consolidate(ledger.uow, endorsed(ledger, "the adapter also passes the fuzz suite"), actor=ACTOR)
    assert later.outcome == "not_ready"
    [short] = [r for r in later.reasons if not r.ok]
    assert (short.rule, short.detail) == (
        "effective_support",
        "n_eff 1.39 over 2 independent support group(s), 1.5 required",
    )
    # But the past consolidation replays exactly, with the table it used
    again = replay(ledger.uow, str(committed.consolidation_id))
    assert (again.match, again.hash_match, again.decision_match) == (True, True, True)
    assert again.replayed_outcome == "consolidate"
    # And so does the not-ready evaluation (its manifest kept in the evaluation chain)
    assert replay(ledger.uow, str(later.evaluation_id)).match is True
    # And a version's own resolution never measures its decision: resolving the first node
    # (both wrong) moves every other version's table (7 of 30), not its own
    resolve(ledger.uow, str(first), outcome="false", source="test", reason="r", actor=ACTOR)
    with ledger.uow() as tx:
        assert used(current_snapshot(tx.conn, first)) == 0.44
        assert used(current_snapshot(tx.conn, later.node_version_id)) == round(7 / 30 + 23 / 30 * 0.3, 6)
    assert replay(ledger.uow, str(committed.consolidation_id)).match is True


def test_n_eff_is_shown_beside_the_group_count_where_a_table_was_measured(engine: Engine) -> None:
    # Given a thread under v1 and a node two providers endorse
    plain = Ledger.new(engine, title="v1 thread")
    v1_node = endorsed(plain, "measured under v1")
    # Then its groups show no n_eff: v1 measures no correlation table
    assert groups(plain.uow, str(v1_node)).n_eff is None
    # Given a thread under v2, a consolidated node and a node decided later, after resolutions
    pin_rule_set(plain.uow, "council-default-v2", actor=ACTOR)
    ledger = Ledger.new(engine)
    first = endorsed(ledger, "consolidated first")
    assert consolidate(ledger.uow, first, actor=ACTOR).outcome == "committed"
    for i in range(6):
        past = endorsed(ledger, f"resolved {i}")
        resolve(
            ledger.uow,
            str(past),
            outcome="false" if i % 2 else "true",
            source="test",
            reason="r",
            actor=ACTOR,
        )
    later = endorsed(ledger, "decided later")
    assert consolidate(ledger.uow, later, actor=ACTOR).outcome == "not_ready"
    # Then groups shows n_eff now (the live table: 4 / (2 + 2 * 0.44))
    shown = groups(ledger.uow, str(first))
    assert (shown.support_groups, shown.n_eff) == (2, round(4 / 2.88, 6))
    # And history shows each decision's n_eff as it was decided
    assert [c.n_eff for c in history(ledger.uow, str(first)).consolidations] == [1.54]
    assert [e.n_eff for e in history(ledger.uow, str(later)).evaluations] == [1.39]
    # And MCP's node_status and the decision record carry it beside the group count
    status = node_status(ledger.uow, str(later), run=None, holder="test")
    assert (status.support_groups, status.n_eff) == (2, round(4 / 2.88, 6))
    record = decision_record(ledger.uow, str(ledger.thread_id))
    [prop] = [p for p in record.propositions if p.head_version_id == first]
    assert prop.n_eff == round(4 / 2.88, 6)
