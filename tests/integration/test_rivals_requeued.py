"""Rivals are decided again when what blocks or weighs on them changes (issue 43), against
real Postgres: a claim landing on one alternative makes every other alternative of its set
due for evaluation (under exclusive_alternatives only), and a retracted consolidation names
the rivals it blocked — which then consolidate."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import Engine

from council.domain.agent_output import AgentOutput
from council.services.consolidation import consolidate
from council.services.retraction import adjudicate, propose_retraction, vote
from tests.builders import ACTOR, Ledger
from tests.engines import unit_of_work
from tests.rivals import exclusive_ledger, rivals
from tests.rows import row


def _endorse(engine: Engine, ledger: Ledger, version_id: UUID) -> list[UUID]:
    """A run's output endorsing ``version_id``; the versions it touched (evaluated next)."""
    run_id = ledger.open_run("zhipu")
    with unit_of_work(engine) as conn:
        run = row(conn, "agent_runs", "id = :v", v=run_id)
    output = AgentOutput.model_validate(
        {"claims": [{"node_version_id": str(version_id), "type": "endorse", "confidence": 0.6}]}
    )
    with ledger.uow() as tx:
        assert tx.runs.fence(run_id, run["attempt"]) is not None
        return list(tx.outputs.apply(run, output, actor=ACTOR).touched_versions)


def test_a_claim_on_one_alternative_makes_its_rivals_due(engine: Engine) -> None:
    # Given X and Y, rivals under exclusive_alternatives, and a third proposition in no set
    ledger = exclusive_ledger(engine)
    x, y = rivals(ledger)
    aside = UUID(str(ledger.node("unrelated")["version_id"]))
    # When a run endorses X, Then X and its rival Y are evaluated next; the unrelated one is not
    assert _endorse(engine, ledger, x) == [x, y]
    assert _endorse(engine, ledger, aside) == [aside]


def test_without_exclusive_alternatives_a_claim_touches_only_its_version(engine: Engine) -> None:
    ledger = Ledger.new(engine, title="v1", evidence_items=0)
    x, _ = rivals(ledger)
    assert _endorse(engine, ledger, x) == [x]


def test_a_rival_blocked_by_a_consolidation_consolidates_once_it_is_retracted(engine: Engine) -> None:
    # Given X consolidated, and Y, its rival, blocked by it alone
    ledger = exclusive_ledger(engine)
    x, y = rivals(ledger)
    committed = consolidate(ledger.uow, x, actor=ACTOR)
    assert committed.outcome == "committed"
    blocked = consolidate(ledger.uow, y, actor=ACTOR)
    assert [r.rule for r in blocked.reasons if not r.ok] == ["no_live_rival"]
    # When X's consolidation is retracted by two independent votes
    proposal = propose_retraction(ledger.uow, str(committed.consolidation_id), reason="r", actor=ACTOR)
    for provider in ("anthropic", "openai"):
        voter = str(ledger.run(provider, agent=f"{provider}-voter"))
        vote(ledger.uow, str(proposal.id), voter, choice="endorse", actor=ACTOR, confidence=0.9)
    decided = adjudicate(ledger.uow, str(proposal.id), actor=ACTOR)
    # Then the adjudication names Y as due, and Y, decided again, consolidates
    assert decided.outcome == "retracted" and decided.rivals_due == [y]
    assert consolidate(ledger.uow, y, actor=ACTOR).outcome == "committed"
