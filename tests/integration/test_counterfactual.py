"""Counterfactual replay (docs/architecture.md §12): every stored decision decided
again under another rule set, from stored records alone, writing nothing."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine, text

from council.domain.counterfactual import rule_set_sha256
from council.domain.snapshot import snapshot_hash
from council.errors import BadInput, NotFound
from council.services.consolidation import consolidate
from council.services.counterfactual import counterfactual, list_rule_sets, store_rule_set
from council.services.threads import create_thread
from tests.builders import ACTOR, Ledger
from tests.engines import unit_of_work, uow_of

DEFAULT_BODY = {
    "min_support_groups": 2,
    "min_support_providers": 2,
    "dispute_confidence_bar": 0.6,
    "block_on_open_objective_fork": True,
    "block_on_unsound_support_evidence": True,
    "block_on_unmet_pending_actions": True,
    "require_mainline_or_merged": True,
    "retraction_min_endorse_groups": 2,
}


def rule_set(rule_set_id: str, **changes: Any) -> dict[str, Any]:
    return {"id": rule_set_id, "description": "test", "body": {**DEFAULT_BODY, **changes}}


def supported(ledger: Ledger, providers: tuple[str, ...]) -> UUID:
    """A node endorsed by one independent run per provider (each citing its own evidence)."""
    version_id = UUID(str(ledger.node(f"node backed by {', '.join(providers)}")["version_id"]))
    for provider in providers:
        evidence = ledger.add_evidence(f"{provider} evidence for {version_id}")
        ledger.claim(ledger.run(provider), version_id, confidence=0.8, cites=[evidence])
    return version_id


def row_counts(engine: Engine) -> dict[str, int]:
    with unit_of_work(engine) as conn:
        tables = conn.execute(
            text("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
        ).scalars()
        return {
            name: int(conn.execute(text(f'SELECT count(*) FROM "{name}"')).scalar_one())
            for name in list(tables)
        }


@pytest.fixture
def decided(engine: Engine) -> dict[str, Any]:
    """Given a thread with three decisions of each kind the committer makes:
    two providers (committed), three providers (committed), one provider (not ready)."""
    ledger = Ledger.new(engine)
    uow = uow_of(engine)
    two = consolidate(uow, supported(ledger, ("anthropic", "openai")), actor=ACTOR)
    three = consolidate(uow, supported(ledger, ("anthropic", "openai", "zhipu")), actor=ACTOR)
    one = consolidate(uow, supported(ledger, ("anthropic",)), actor=ACTOR)
    assert (two.outcome, three.outcome, one.outcome) == ("committed", "committed", "not_ready")
    return {"ledger": ledger, "two": two, "three": three, "one": one}


def test_the_stored_default_rule_set_reproduces_every_stored_decision(
    engine: Engine, decided: dict[str, Any]
) -> None:
    # When every stored decision is replayed under the default rule set, by id
    report = counterfactual(uow_of(engine), "council-default-v1")
    # Then all three were rebuilt and reproduced, and none would change
    assert (report.compared, report.reproduced, report.changed, report.not_reproduced) == (3, 3, [], [])


def test_a_stricter_rule_set_flips_exactly_the_decisions_that_lack_a_third_group(
    engine: Engine, decided: dict[str, Any]
) -> None:
    before = row_counts(engine)
    # When the decisions are replayed under "three independent groups"
    report = counterfactual(uow_of(engine), rule_set("three-groups-v1", min_support_groups=3))
    # Then only the two-provider consolidation would change, for the support rule alone
    assert [c.id for c in report.changed] == [decided["two"].consolidation_id]
    change = report.changed[0]
    assert (change.kind, change.stored_outcome, change.counterfactual_outcome) == (
        "consolidation",
        "consolidate",
        "not_ready",
    )
    assert change.rules_changed == ["independent_support"]
    failed = [r for r in change.counterfactual_reasons if not r.ok]
    assert [(r.rule, r.detail) for r in failed] == [
        ("independent_support", "2 independent support group(s), 3 required")
    ]
    assert all(r.ok for r in change.stored_reasons)
    # And nothing was written
    assert row_counts(engine) == before


def test_dropping_provider_diversity_flips_only_the_single_provider_evaluation(
    engine: Engine, decided: dict[str, Any]
) -> None:
    # When replayed under "one group from one provider is enough"
    lax = rule_set("one-group-v1", min_support_groups=1, min_support_providers=1)
    report = counterfactual(uow_of(engine), lax, thread=decided["ledger"].thread_id)
    # Then the not-ready evaluation would have consolidated
    assert [(c.id, c.kind, c.counterfactual_outcome) for c in report.changed] == [
        (decided["one"].evaluation_id, "evaluation", "consolidate")
    ]
    assert report.changed[0].rules_changed == ["independent_support", "provider_diversity"]


def test_every_rebuilt_snapshot_hashes_to_its_stored_digest(engine: Engine, decided: dict[str, Any]) -> None:
    # Given the stored decisions and their manifests, read through the one ledger method
    with uow_of(engine)() as tx:
        stored = [d for _, d in tx.consolidations.stored_decisions()]
        named = tx.consolidations.manifests([UUID(d.id) for d in stored])
        rebuilt = tx.consolidations.rebuild_many([named[UUID(d.id)] for d in stored])
    # Then each rebuilt snapshot hashes to the digest its decision stored
    assert [snapshot_hash(s) for s in rebuilt] == [d.snapshot_sha256 for d in stored]
    assert {d.kind for d in stored} == {"consolidation", "evaluation"}


def test_scope_by_thread_and_time(engine: Engine, decided: dict[str, Any]) -> None:
    strict = rule_set("three-groups-v1", min_support_groups=3)
    other = Ledger.new(engine, title="another thread")
    consolidate(uow_of(engine), supported(other, ("anthropic", "openai")), actor=ACTOR)
    # Across threads both two-provider consolidations change; one thread's report has its own only
    assert len(counterfactual(uow_of(engine), strict).changed) == 2
    scoped = counterfactual(uow_of(engine), strict, thread=decided["ledger"].thread_id)
    assert [c.id for c in scoped.changed] == [decided["two"].consolidation_id]
    # And --since after every decision compares nothing
    with unit_of_work(engine) as conn:
        later = conn.execute(text("SELECT clock_timestamp()")).scalar_one()
    assert counterfactual(uow_of(engine), strict, since=later).compared == 0


def test_bad_rule_sets_are_refused(engine: Engine) -> None:
    uow = uow_of(engine)
    with pytest.raises(NotFound):
        counterfactual(uow, "no-such-rules-v1")
    with pytest.raises(BadInput, match="unknown rule"):
        counterfactual(uow, rule_set("x-v1", quorum=3))
    with pytest.raises(BadInput, match="min_support_groups"):
        counterfactual(uow, rule_set("x-v1", min_support_groups=0))
    with pytest.raises(BadInput, match="lacks"):
        counterfactual(uow, {"id": "x-v1", "body": {"min_support_groups": 2}})


def test_a_rule_set_is_stored_with_the_report_that_motivated_it_and_pinned_for_new_threads(
    engine: Engine, decided: dict[str, Any]
) -> None:
    uow = uow_of(engine)
    strict = rule_set("three-groups-v1", min_support_groups=3)
    report = counterfactual(uow, strict).json_document()
    # When it is stored with that report and pinned
    stored = store_rule_set(uow, strict, report=report, pin=True, actor=ACTOR)
    # Then its provenance names the report and what it changed
    assert stored.created and stored.rule_set.pinned
    assert stored.rule_set.body_sha256 == rule_set_sha256("three-groups-v1", strict["body"])
    provenance = stored.rule_set.provenance
    assert provenance is not None
    assert (provenance.report_sha256, provenance.compared) == (report["report_sha256"], 3)
    assert provenance.changed == [decided["two"].consolidation_id]
    # And a new thread is pinned to it, while the open thread keeps its own
    thread = create_thread(uow, title="after the change", objective="o", actor=ACTOR)
    assert thread.rule_set_id == "three-groups-v1"
    assert list_rule_sets(uow).pinned_for_new_threads == "three-groups-v1"
    # And replaying the stored rule set by id gives the same report
    assert counterfactual(uow, "three-groups-v1").report_sha256 == report["report_sha256"]
    # And storing it again is idempotent; another body under the same id is refused
    assert not store_rule_set(uow, strict, report=None, pin=False, actor=ACTOR).created
    with pytest.raises(BadInput, match="another body"):
        store_rule_set(
            uow, rule_set("three-groups-v1", min_support_groups=4), report=None, pin=False, actor=ACTOR
        )


def test_an_altered_or_foreign_report_is_refused_as_provenance(
    engine: Engine, decided: dict[str, Any]
) -> None:
    uow = uow_of(engine)
    strict = rule_set("three-groups-v1", min_support_groups=3)
    report = counterfactual(uow, strict).json_document()
    before = row_counts(engine)
    with pytest.raises(BadInput, match="altered"):
        store_rule_set(uow, strict, report={**report, "compared": 99}, pin=True, actor=ACTOR)
    with pytest.raises(BadInput, match="another rule set"):
        store_rule_set(
            uow, rule_set("four-groups-v1", min_support_groups=4), report=report, pin=True, actor=ACTOR
        )
    assert row_counts(engine) == before
