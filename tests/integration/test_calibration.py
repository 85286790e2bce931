"""Calibration per model (docs/architecture.md §12): figures from the core tables
match a small ledger computed by hand, in the view and in the service alike."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine, text

from council.domain.commands import NewVersion
from council.errors import NotFound
from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate
from council.services.learning import calibration
from council.services.nodes import add_version, set_node_status
from council.services.retraction import adjudicate, propose_retraction, vote
from tests.builders import ACTOR, Ledger
from tests.engines import unit_of_work, uow_of

A = ("anthropic/claude-sonnet-4-6", "anthropic")
OA = ("openai/gpt-5.5", "openai")
Z = ("zai/glm-5.1", "zhipu")


def small_ledger(engine: Engine) -> Ledger:
    """Live, retracted, superseded, killed and open nodes, claimed on by three models."""
    uow = uow_of(engine)
    ledger = Ledger.new(engine, evidence_items=0)

    def claim(provider: str, version: UUID, kind: str, confidence: float) -> None:
        evidence = ledger.add_evidence(f"{provider} {kind} {confidence} on {version}")
        ledger.claim(ledger.run(provider), version, kind, confidence=confidence, cites=[evidence])

    def node(content: str) -> UUID:
        return UUID(str(ledger.node(content)["version_id"]))

    live = node("live")
    claim("anthropic", live, "endorse", 0.8)
    claim("openai", live, "endorse", 0.6)
    assert consolidate(uow, live, actor=ACTOR).outcome == "committed"
    claim("zhipu", live, "dispute", 0.7)
    claim("zhipu", live, "abstain", 0.5)  # abstentions do not count

    retracted = node("retracted")
    claim("anthropic", retracted, "endorse", 0.9)
    claim("openai", retracted, "endorse", 0.7)
    consolidation = consolidate(uow, retracted, actor=ACTOR).consolidation_id
    assert consolidation is not None
    claim("zhipu", retracted, "dispute", 0.4)
    proposal = propose_retraction(uow, consolidation, reason="unsound", actor=ACTOR).id
    for provider in ("anthropic", "openai"):
        vote(uow, proposal, ledger.run(provider), choice="endorse", actor=ACTOR)
    assert adjudicate(uow, proposal, actor=ACTOR).outcome == "retracted"

    first = ledger.node("superseded")
    old = UUID(str(first["version_id"]))
    claim("anthropic", old, "endorse", 0.5)
    claim("openai", old, "endorse", 0.75)
    assert consolidate(uow, old, actor=ACTOR).outcome == "committed"
    new = UUID(str(add_version(uow, NewVersion(first["logical_node_id"], "superseded, revised"), actor=ACTOR)
                   .version_id))  # fmt: skip
    claim("anthropic", new, "endorse", 0.65)
    claim("openai", new, "endorse", 0.85)
    assert consolidate(uow, new, actor=ACTOR).superseded_consolidation_id is not None

    killed = node("killed")
    claim("zhipu", killed, "dispute", 0.95)
    claim("anthropic", killed, "endorse", 0.3)
    set_node_status(uow, killed, status="killed", reason="refuted", actor=ACTOR)

    unresolved = node("open")
    claim("anthropic", unresolved, "endorse", 0.55)
    claim("openai", unresolved, "dispute", 0.6)
    return ledger


def bucket(resolved: int, mean: float | None = None, right: float | None = None) -> tuple[Any, ...]:
    return (resolved, mean, right)


# By hand: (endorsements, live, superseded, retracted, disputes, vindicated, resolved, right, Brier)
EXPECTED = {
    A: (6, 2, 1, 1, 0, 0, 5, 3, 0.2625),  # (.04 + .81 + .25 + .1225 + .09) / 5
    OA: (4, 2, 1, 1, 1, 0, 4, 3, 0.18375),  # (.16 + .49 + .0625 + .0225) / 4
    Z: (0, 0, 0, 0, 3, 2, 3, 2, 0.284167),  # (.49 + .36 + .0025) / 3
}
RELIABILITY = {
    A: [bucket(0), bucket(1, 0.3, 0.0), bucket(1, 0.5, 1.0), bucket(1, 0.65, 1.0), bucket(2, 0.85, 0.5)],
    OA: [
        bucket(0),
        bucket(0),
        bucket(0),
        bucket(3, 0.683333, 0.666667),
        bucket(1, 0.85, 1.0),
    ],  # .6 .7 .75 | .85
    Z: [bucket(0), bucket(0), bucket(1, 0.4, 1.0), bucket(1, 0.7, 0.0), bucket(1, 0.95, 1.0)],
}


def figures(row: Any) -> tuple[Any, ...]:
    keys = ("endorsements", "endorsements_live", "endorsements_superseded", "endorsements_retracted",
            "disputes", "disputes_vindicated", "resolved", "right")  # fmt: skip
    return (*(int(row[k]) for k in keys), float(row["brier"]))


def test_calibration_matches_a_hand_computed_ledger(engine: Engine, uow: UnitOfWork) -> None:
    ledger = small_ledger(engine)
    # The service, for the thread and over all threads
    for shown in (calibration(uow, thread=ledger.thread_id), calibration(uow)):
        by_model = {(m.model, m.provider): m for m in shown.models}
        assert set(by_model) == set(EXPECTED)
        for key, expected in EXPECTED.items():
            assert figures(by_model[key].model_dump()) == expected, key
            assert [
                (b.resolved, b.mean_confidence, b.right_share) for b in by_model[key].reliability
            ] == RELIABILITY[key], key
    # The dashboard view gives the same figures
    with unit_of_work(engine) as conn:
        rows = conn.execute(text("SELECT * FROM council_v_calibration")).mappings().all()
    assert {(r["model"], r["provider"]): figures(r) for r in rows} == EXPECTED


def test_an_unknown_thread_is_refused(engine: Engine, uow: UnitOfWork) -> None:
    with pytest.raises(NotFound):
        calibration(uow, thread="00000000-0000-4000-8000-000000000000")
