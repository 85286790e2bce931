"""Budgets reserved in the ledger before any run is enqueued (docs/guide/budgets.md).

The race: 64 dispatch processes on one thread, each connected and waiting, released at
once (``benchmarks.harness.race``, forked from a server that imported the ledger once);
the thread's budget fits exactly ten of them. Each dispatch takes the thread's budget
lock in its transaction, reads what is spent and reserved, and reserves its runs or is
refused; so exactly ten are created, the sum of reservations never exceeds the budget,
and a refused dispatch writes nothing and enqueues nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine, text

from benchmarks.harness import race
from council.adapters.scheduler import Recorder
from council.agents.pricing import price_per_token
from council.errors import BadInput
from council.ledger.db import pool_for
from council.ledger.unit import UnitOfWork
from council.services.budgets import set_thread_budget, thread_budget
from council.services.dispatch import dispatch
from council.services.threads import create_thread, show_thread
from tests.engines import uow_of
from tests.processes import RACE_START_METHOD

DISPATCHES = 64
FITS = 10
AGENTS = ["alpha", "beta"]
ACTOR = "test:budget"
# Real (not simulated), priced models behind an endpoint nobody calls: a dispatch only
# enqueues, into a recording scheduler.
PROFILES = """
[profiles.alpha]
runtime = "litellm"
model = "openai/gpt-4o-mini"
provider = "openai"
api_base = "http://127.0.0.1:9/v1"
api_key_env = ""
params = {max_tokens = 1000}

[profiles.beta]
runtime = "litellm"
model = "anthropic/claude-sonnet-4-6"
provider = "anthropic"
api_base = "http://127.0.0.1:9/v1"
api_key_env = ""
params = {max_tokens = 500}

[profiles.mystery]
runtime = "litellm"
model = "openai/no-such-model-anywhere"
provider = "openai"
api_base = "http://127.0.0.1:9/v1"
api_key_env = ""
"""


@pytest.fixture
def priced_profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path = tmp_path / "profiles.toml"
    path.write_text(PROFILES, encoding="utf-8")
    monkeypatch.setenv("COUNCIL_PROFILES", str(path))
    monkeypatch.setenv("COUNCIL_SIMULATE", "never")
    return str(path)


def _thread(engine: Engine) -> UUID:
    made = create_thread(uow_of(engine), title="Budget", objective="Is the budget held?", actor=ACTOR)
    return made.id


def _count(engine: Engine, sql: str, **params: object) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(sql), params).scalar_one())


def dispatcher(url: str, thread_id: UUID, profiles: str) -> Callable[[], dict[str, Any]]:
    """One contender: its own engine and scheduler; returns what its dispatch did."""
    os.environ["COUNCIL_PROFILES"] = profiles
    os.environ["COUNCIL_SIMULATE"] = "never"
    uow = UnitOfWork(pool_for(url, pool_size=1))  # Council's pool alone: one connection a contender
    with uow() as tx:
        tx.conn.execute("SELECT 1")
    price_per_token("openai/gpt-4o-mini")  # litellm imported before the race, not in it
    scheduler = Recorder()

    def act() -> dict[str, Any]:
        try:
            made = dispatch(uow, scheduler, thread_id, AGENTS, mode="independent", rounds=1, actor=ACTOR)
        except BadInput as exc:
            return {"refused": str(exc), "enqueued": len(scheduler.runs)}
        assert made.reservation is not None
        return {
            "dispatch_id": str(made.dispatch_id),
            "usd": made.reservation.usd,
            "enqueued": len(scheduler.runs),
        }

    return act


def test_64_racing_dispatches_never_reserve_past_the_thread_budget(
    engine: Engine, db_url: str, priced_profiles: str
) -> None:
    # Given what one dispatch of two priced agents reserves on a thread like the raced one
    probe = dispatch(
        uow_of(engine),
        Recorder(),
        _thread(engine),
        AGENTS,
        mode="independent",
        rounds=1,
        actor=ACTOR,
        budget_usd=1,
    )
    assert probe.reservation is not None and probe.reservation.usd > 0
    one = Decimal(str(probe.reservation.usd))
    # And a thread whose budget fits ten of them, and not eleven
    thread_id = _thread(engine)
    budget = one * FITS + one / 2
    set_thread_budget(uow_of(engine), thread_id, str(budget), actor=ACTOR)
    # When 64 processes dispatch on it at once
    raced = race(
        dispatcher, [(db_url, thread_id, priced_profiles)] * DISPATCHES, start_method=RACE_START_METHOD
    )
    # Then none crashed: ten reserved and were sent, the others were refused with the budget's reason
    assert raced.errors == []
    sent = [r for r in raced.results if "dispatch_id" in r]
    refused = [r for r in raced.results if "refused" in r]
    assert len(sent) == FITS and len(refused) == DISPATCHES - FITS
    assert all(r["enqueued"] == len(AGENTS) for r in sent)
    assert all(
        r["enqueued"] == 0 and r["refused"].startswith("budget: the dispatch is refused") for r in refused
    )
    assert all("left" in r["refused"] for r in refused)
    # And the ledger holds exactly the ten dispatches, their runs and their reservations
    # (a refused dispatch wrote nothing), whose sum is within the budget
    assert _count(engine, "SELECT count(*) FROM dispatches WHERE thread_id = :t", t=thread_id) == FITS
    assert _count(engine, "SELECT count(*) FROM agent_runs WHERE thread_id = :t", t=thread_id) == FITS * len(
        AGENTS
    )
    assert (
        _count(
            engine,
            "SELECT count(*) FROM events WHERE thread_id = :t AND kind = 'dispatch.created'",
            t=thread_id,
        )
        == FITS
    )
    with engine.connect() as conn:
        reserved = conn.execute(
            text(
                "SELECT sum(run_usd * runs), count(DISTINCT dispatch_id) FROM budget_reservations"
                " WHERE thread_id = :t"
            ),
            {"t": thread_id},
        ).one()
    assert reserved[1] == FITS
    assert reserved[0] <= budget
    state = thread_budget(uow_of(engine), thread_id).state
    assert Decimal(str(state.reserved_usd)) == reserved[0]
    assert state.remaining_usd is not None and 0 <= state.remaining_usd < float(one)


def test_a_dispatch_over_its_own_budget_is_refused_and_writes_nothing(
    engine: Engine, priced_profiles: str
) -> None:
    # Given a thread without a budget
    thread_id = _thread(engine)
    # When a dispatch is given a budget below what its runs may cost
    with pytest.raises(
        BadInput, match=r"^budget: the dispatch is refused, nothing was sent: .*over --budget-usd"
    ):
        dispatch(
            uow_of(engine),
            Recorder(),
            thread_id,
            AGENTS,
            mode="independent",
            rounds=1,
            actor=ACTOR,
            budget_usd=0.0001,
        )
    # Then nothing was written
    assert _count(engine, "SELECT count(*) FROM dispatches WHERE thread_id = :t", t=thread_id) == 0
    assert _count(engine, "SELECT count(*) FROM budget_reservations") == 0


def test_an_unpriced_model_under_a_budget_is_refused_with_the_reason(
    engine: Engine, priced_profiles: str
) -> None:
    # Given a thread with a budget
    thread_id = _thread(engine)
    set_thread_budget(uow_of(engine), thread_id, 5, actor=ACTOR)
    scheduler = Recorder()
    # When a dispatch names a model without a price
    with pytest.raises(BadInput, match="mystery's model openai/no-such-model-anywhere has no price"):
        dispatch(
            uow_of(engine),
            scheduler,
            thread_id,
            ["alpha", "mystery"],
            mode="independent",
            rounds=1,
            actor=ACTOR,
        )
    # Then nothing was written or sent
    assert scheduler.runs == []
    assert _count(engine, "SELECT count(*) FROM dispatches WHERE thread_id = :t", t=thread_id) == 0


def test_a_reservation_is_reconciled_when_its_runs_end(
    engine: Engine, owner_engine: Engine, priced_profiles: str
) -> None:
    # Given a thread with a budget and a deliberative dispatch of two rounds reserved on it
    thread_id = _thread(engine)
    set_thread_budget(uow_of(engine), thread_id, 10, actor=ACTOR)
    made = dispatch(uow_of(engine), Recorder(), thread_id, AGENTS, mode="deliberative", rounds=2, actor=ACTOR)
    assert made.reservation is not None
    per_run = {a.agent: Decimal(str(a.run_usd)) for a in made.reservation.agents}
    assert all(a.runs == 2 for a in made.reservation.agents)
    shown = show_thread(uow_of(engine), thread_id).budget
    assert Decimal(str(shown.reserved_usd)) == 2 * sum(per_run.values())
    assert shown.spent_usd == 0
    # When alpha's first run ends with a recorded cost and beta's fails without one
    with owner_engine.begin() as conn:
        ids = dict(
            conn.execute(
                text("SELECT agent, id FROM agent_runs WHERE dispatch_id = :d"), {"d": made.dispatch_id}
            ).all()
        )
        conn.execute(text("ALTER TABLE agent_runs DISABLE TRIGGER USER"))
        conn.execute(
            text("UPDATE agent_runs SET status = 'succeeded', cost_usd = 0.001, usage = '{}' WHERE id = :i"),
            {"i": ids["alpha"]},
        )
        conn.execute(text("UPDATE agent_runs SET status = 'failed' WHERE id = :i"), {"i": ids["beta"]})
        conn.execute(text("ALTER TABLE agent_runs ENABLE TRIGGER USER"))
    # Then alpha's run counts its cost as spent, beta's failed run releases its share,
    # and the second round (not yet created) stays reserved
    state = show_thread(uow_of(engine), thread_id).budget
    assert Decimal(str(state.spent_usd)) == Decimal("0.001")
    assert Decimal(str(state.reserved_usd)) == sum(per_run.values())
    assert state.usd == 10
    assert Decimal(str(state.remaining_usd)) == 10 - Decimal("0.001") - sum(per_run.values())
