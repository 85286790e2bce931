"""council-default-v2 decides with the error-correlation table measured when the decision
was made (snapshot v3): replay rebuilds that table from the manifest, so a decision made
under v2 replays exactly after later resolutions changed the live table."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Engine

from council.ledger.snapshots import current_snapshot
from council.services.consolidation import consolidate, replay
from council.services.counterfactual import pin_rule_set
from council.services.observation import resolve
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
