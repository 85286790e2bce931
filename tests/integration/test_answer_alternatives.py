"""The answer is honest with alternative sets, against real Postgres (issue 43): under v3 a
rival's endorsers are named in the answer as derived disputes; under a rule set without
exclusive_alternatives two rivals can both consolidate, and then nothing is established
and both are listed."""

from __future__ import annotations

from sqlalchemy import Engine

from council.domain.answer import answer_groups
from council.services.consolidation import consolidate
from council.services.export_record import decision_record
from tests.builders import ACTOR, Ledger
from tests.rivals import exclusive_ledger, rivals


def test_rivals_both_consolidated_under_v1_establish_nothing(engine: Engine) -> None:
    # Given X and Y (Y contradicts X) on a thread whose rule set lets both consolidate
    ledger = Ledger.new(engine, title="no exclusivity", evidence_items=0)
    x, y = rivals(ledger)
    assert consolidate(ledger.uow, x, actor=ACTOR).outcome == "committed"
    assert consolidate(ledger.uow, y, actor=ACTOR).outcome == "committed"
    # When the thread's answer is read (export leads with it)
    answer = decision_record(ledger.uow, str(ledger.thread_id)).answer
    # Then nothing is established, both are listed as consolidated rivals, and it says why
    assert not answer.established and answer.version_id is None
    assert sorted((a.version_id, a.rival, a.consolidated) for a in answer.alternatives) == sorted(
        [(x, True, True), (y, True, True)]
    )
    assert answer.conflict is not None and str(x)[:8] in answer.conflict and str(y)[:8] in answer.conflict


def test_under_v3_a_rivals_endorsers_are_named_as_derived_disputes(engine: Engine) -> None:
    # Given X and Y, rivals under exclusive_alternatives, each endorsed by two providers
    ledger = exclusive_ledger(engine)
    x, y = rivals(ledger)
    with ledger.uow() as tx:
        snapshot = tx.consolidations.current_snapshot(y)
        x_endorsers = {c.run_id for c in tx.nodes.show(x).claims}
        y_endorsers = {c.run_id for c in tx.nodes.show(y).claims}
    # When Y's groups are read as the answer shows them
    groups = answer_groups(snapshot, {})
    # Then its own endorsers support it, and X's endorsers dispute it, named as derived
    assert {r for g in groups if g.kind == "support" for r in g.runs} == y_endorsers
    disputes = [g for g in groups if g.kind == "dispute"]
    assert {r for g in disputes for r in g.runs} == x_endorsers
    assert all(set(g.derived_runs) == set(g.runs) for g in disputes)
    assert all(g.derived_runs == [] for g in groups if g.kind == "support")
