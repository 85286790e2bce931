"""Stance changes (docs/architecture.md §12): the view classifies each change from
the core tables, the service's domain classifier agrees, and seeded simulated
councils with a conformity parameter move toward or against what they were shown."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine, text

from council.adapters.scheduler import Recorder
from council.ledger.unit import UnitOfWork
from council.services import rounds
from council.services.dispatch import dispatch
from council.services.execution import execute_run
from council.services.learning import stances
from council.services.reversal import change_validity
from tests.builders import ACTOR, Ledger
from tests.engines import unit_of_work, uow_of
from tests.rows import insert, row


def view_classes(engine: Engine, thread_id: UUID) -> dict[UUID, str]:
    with unit_of_work(engine) as conn:
        rows = conn.execute(
            text("SELECT claim_id, change_class FROM council_v_stance_changes WHERE thread_id = :t"),
            {"t": thread_id},
        )
        return {row.claim_id: row.change_class for row in rows}


def test_each_class_is_recognised_from_a_hand_built_ledger(engine: Engine, uow: UnitOfWork) -> None:
    ledger = Ledger.new(engine, evidence_items=3)
    e0, e1, e2 = ledger.evidence

    def version(content: str) -> UUID:
        return UUID(str(ledger.node(content)["version_id"]))

    def alpha(
        node: UUID, kind: str, *, exposed_to: tuple[UUID, ...] = (), cites: tuple[UUID, ...] = ()
    ) -> UUID:
        claim = ledger.claim(ledger.run("anthropic", "alpha", exposed_to=exposed_to), node, kind, cites=cites)
        return UUID(str(claim["id"]))

    def claim_run(claim_id: UUID) -> UUID:
        return UUID(str(row(engine, "claims", "id = :c", c=claim_id)["run_id"]))

    def control_of(run_id: UUID) -> UUID:
        """A control run of ``run_id`` (as dispatch --controls makes one), recorded directly."""
        made = insert(engine, "dispatches", thread_id=ledger.thread_id, mode="deliberative",
                      agents=["alpha"], rounds=2, controls=True)  # fmt: skip
        control = insert(engine, "agent_runs", thread_id=ledger.thread_id, dispatch_id=made["id"],
                         agent="alpha", model="anthropic/model", provider="anthropic", round=2,
                         mode="deliberative", status="running", control_of=run_id)  # fmt: skip
        return UUID(str(control["id"]))

    def others(node: UUID, kind: str) -> tuple[UUID, ...]:
        runs = (ledger.run("openai", "beta"), ledger.run("zhipu", "gamma"))
        for run in runs:
            ledger.claim(run, node, kind)
        return runs

    expected: dict[UUID, str] = {}
    # Held: the same position again (a confidence change is not a stance change)
    held = version("held")
    alpha(held, "endorse")
    expected[alpha(held, "endorse")] = "held"
    # Toward: disputed, then shown two endorsements, endorses
    toward = version("toward")
    alpha(toward, "dispute")
    shown = others(toward, "endorse")
    expected[alpha(toward, "endorse", exposed_to=shown)] = "toward_exposure"
    # Against: abstained, then shown two endorsements, disputes
    against = version("against")
    alpha(against, "abstain")
    shown = others(against, "endorse")
    expected[alpha(against, "dispute", exposed_to=shown)] = "against_exposure"
    # After new evidence: it cites an item the earlier claim did not (even though it was also shown stances)
    fresh = version("after new evidence")
    alpha(fresh, "endorse", cites=(e0,))
    shown = others(fresh, "dispute")
    new_item = ledger.add_evidence("a new measurement")
    expected[alpha(fresh, "dispute", exposed_to=shown, cites=(e0, new_item))] = "after_evidence"
    # After invalidated evidence: what it cited fell between the two claims
    fallen = version("after invalidated evidence")
    alpha(fallen, "endorse", cites=(e1,))
    change_validity(uow, None, e1, action="invalidate", reason="fabricated", actor=ACTOR)
    expected[alpha(fallen, "abstain", cites=(e1,))] = "after_evidence"
    # No recorded cause: changed with no exposure and no new evidence
    silent = version("no recorded cause")
    alpha(silent, "endorse", cites=(e2,))
    expected[alpha(silent, "dispute", cites=(e2,))] = "no_recorded_cause"
    # First stance: shown others' stances, with no earlier stance of its own
    first = version("first stance")
    shown = others(first, "endorse")
    expected[alpha(first, "endorse", exposed_to=shown)] = "first_stance"
    # Self-revision: shown two disputes, it disputes, and its control (blind) disputes too
    revised = version("self revision")
    alpha(revised, "endorse")
    shown = others(revised, "dispute")
    changed = alpha(revised, "dispute", exposed_to=shown)
    expected[changed] = "self_revision"
    ledger.claim(control_of(claim_run(changed)), revised, "dispute")  # not a subject itself
    # A control that changed another way explains nothing: toward exposure stays; and a
    # control is nobody's prior stance (the next claim, the same again, is held)
    other_way = version("control changed another way")
    alpha(other_way, "endorse")
    shown = others(other_way, "dispute")
    conformed = alpha(other_way, "dispute", exposed_to=shown)
    expected[conformed] = "toward_exposure"
    ledger.claim(control_of(claim_run(conformed)), other_way, "abstain")
    expected[alpha(other_way, "dispute")] = "held"

    # Then the view classifies exactly these claims so (the others' claims have no prior and no exposure)
    assert view_classes(engine, ledger.thread_id) == expected
    # And the service (the domain classifier) agrees, and counts each class
    shown_result = stances(uow, ledger.thread_id)
    assert {c.claim_id: c.change_class for c in shown_result.changes} == expected
    assert shown_result.counts == {
        "first_stance": 1,
        "held": 2,
        "after_evidence": 2,
        "self_revision": 1,
        "toward_exposure": 2,
        "against_exposure": 1,
        "no_recorded_cause": 1,
    }
    by_claim = {c.claim_id: c for c in shown_result.changes}
    toward_claim = next(c for c, k in expected.items() if k == "toward_exposure")
    assert (by_claim[toward_claim].prior_claim_type, by_claim[toward_claim].exposed_stances) == ("dispute", 2)


PROFILES = """\
[profiles.claude]
model = "council-sim/claude"
provider = "anthropic"
params = {{ conformity = {c} }}

[profiles.codex]
model = "council-sim/codex"
provider = "openai"
params = {{ conformity = {c} }}

[profiles.glm]
model = "council-sim/glm"
provider = "zhipu"
params = {{ conformity = {c} }}
"""


def deliberate(engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, conformity: float) -> Any:
    """A seeded simulated council of three deliberating two rounds over 20 heads."""
    profiles = tmp_path / f"profiles-{conformity}.toml"
    profiles.write_text(PROFILES.format(c=conformity), encoding="utf-8")
    monkeypatch.setenv("COUNCIL_PROFILES", str(profiles))
    for name in list(os.environ):
        if name.startswith("COUNCIL_PROFILE_"):
            monkeypatch.delenv(name)
    # Deliberation over every head: a head the blind round consolidates leaves the frontier
    # (a closing round is decided before the next, tests/integration/test_rounds.py); here
    # nothing is decided between the rounds, so each head is shown to round 2.
    monkeypatch.setattr(rounds, "consolidate_many", lambda *a, **k: [])
    ledger = Ledger.new(engine, title=f"conformity {conformity}", evidence_items=6)
    for i in range(20):
        ledger.node(f"Proposition {i}: the replica keeps workload class {i} under budget")
    uow, scheduler = uow_of(engine), Recorder()
    dispatch(uow, scheduler, ledger.thread_id, ["claude", "codex", "glm"], mode="deliberative", rounds=2,
             actor=ACTOR)  # fmt: skip
    done = 0
    while done < len(scheduler.runs):  # round 2 is enqueued when round 1 is done
        assert execute_run(uow, scheduler, scheduler.runs[done]).status == "succeeded"
        done += 1
    assert done == 6
    return stances(uow, ledger.thread_id), view_classes(engine, ledger.thread_id)


def test_a_conforming_council_moves_toward_what_it_was_shown(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown, view = deliberate(engine, tmp_path, monkeypatch, 1.0)
    assert {c.claim_id: c.change_class for c in shown.changes} == view
    assert shown.counts["toward_exposure"] > 0 and shown.counts["held"] > 0
    assert shown.counts["against_exposure"] == 0 and shown.counts["after_evidence"] == 0
    assert shown.counts["no_recorded_cause"] == 0


def test_a_contrarian_council_moves_against_what_it_was_shown(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown, view = deliberate(engine, tmp_path, monkeypatch, -1.0)
    assert {c.claim_id: c.change_class for c in shown.changes} == view
    assert shown.counts["against_exposure"] > 0
    assert shown.counts["toward_exposure"] == 0 and shown.counts["after_evidence"] == 0
    assert shown.counts["no_recorded_cause"] == 0
