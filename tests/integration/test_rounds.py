"""A deliberative round's verdict is decided before the next round is shown its stances
(council/services/rounds.py): the blind round's independent supporters consolidate a head
before deliberation joins them into one group, whichever worker closes the round."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from council.adapters.scheduler import Recorder
from council.ledger.db import unit_of_work
from council.ledger.unit import UnitOfWork
from council.services.dispatch import dispatch
from council.services.execution import execute_run
from tests.builders import ACTOR, Ledger

PROFILES = """
[profiles.claude]
model = "anthropic/claude-sonnet-4-6"
params = { conformity = 1.0 }
[profiles.codex]
model = "openai/gpt-5.5"
params = { conformity = 1.0 }
"""


def test_the_blind_round_consolidates_before_the_deliberative_round_is_created(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two simulated agents of two providers that endorse the one head of a thread
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(PROFILES, encoding="utf-8")
    monkeypatch.setenv("COUNCIL_PROFILES", str(profiles))
    monkeypatch.setenv("COUNCIL_SIMULATE", "always")
    ledger = Ledger.new(engine, evidence_items=2)
    version = ledger.node("The replica keeps up", cites=list(ledger.evidence))["version_id"]
    uow, scheduler = UnitOfWork(engine), Recorder()
    dispatch(
        uow, scheduler, ledger.thread_id, ["claude", "codex"], mode="deliberative", rounds=2, actor=ACTOR
    )
    # When the blind round's two runs end (no commit worker: nothing else consolidates)
    first = list(scheduler.runs)
    for run in first:
        assert execute_run(uow, scheduler, run).status == "succeeded"
    # Then the closing run decided the head before it created round 2
    with unit_of_work(engine) as conn:
        claims = (
            conn.execute(text("SELECT claim_type FROM claims WHERE node_version_id = :v"), {"v": version})
            .scalars()
            .all()
        )
        live = (
            conn.execute(
                text(
                    "SELECT actor FROM node_status_transitions "
                    "WHERE node_version_id = :v AND to_status = 'resolved'"
                ),
                {"v": version},
            )
            .scalars()
            .all()
        )
    assert sorted(claims) == ["endorse", "endorse"], claims
    assert live == ["worker:round"]
    assert len(scheduler.runs) == 4  # round 2 was created and enqueued after the decision
