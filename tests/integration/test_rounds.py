"""A deliberative round's verdict is decided before the next round is shown its stances
(council/services/rounds.py): the blind round's independent supporters consolidate a head
before deliberation joins them into one group, whichever worker closes the round."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from council.adapters.scheduler import Recorder
from council.domain.commands import NewVersion
from council.ledger.nodes import Nodes
from council.services.dispatch import dispatch
from council.services.execution import execute_run
from council.services.rounds import evaluate_closed_round
from tests.builders import ACTOR, Ledger
from tests.engines import pq, unit_of_work, uow_of
from tests.fakes.chat_model import chat_model, messages_model

PROFILE = '[profiles.{name}]\nmodel = "{model}"\napi_key_env = ""\napi_base = "{url}"\n'


@pytest.fixture
def endorsing_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Profiles ``alpha`` (OpenAI-compatible) and ``beta`` (Anthropic Messages), two models of
    two providers served by local fake servers, each endorsing every head it is shown."""
    with ExitStack() as stack:
        chat, _ = stack.enter_context(chat_model(endorse=True))
        messages, _ = stack.enter_context(messages_model(endorse=True))
        profiles = tmp_path / "profiles.toml"
        profiles.write_text(
            PROFILE.format(name="alpha", model="openai/alpha", url=chat)
            + PROFILE.format(name="beta", model="anthropic/beta", url=messages),
            encoding="utf-8",
        )
        monkeypatch.setenv("COUNCIL_PROFILES", str(profiles))
        monkeypatch.setenv("COUNCIL_SIMULATE", "never")
        yield


@pytest.mark.usefixtures("endorsing_models")
def test_the_blind_round_consolidates_before_the_deliberative_round_is_created(
    engine: Engine,
) -> None:
    # Given two models of two providers (local fake servers) that endorse the one head of a thread
    ledger = Ledger.new(engine, evidence_items=2)
    version = ledger.node("The replica keeps up", cites=list(ledger.evidence))["version_id"]
    uow, scheduler = uow_of(engine), Recorder()
    dispatch(uow, scheduler, ledger.thread_id, ["alpha", "beta"], mode="deliberative", rounds=2, actor=ACTOR)
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


@pytest.mark.usefixtures("endorsing_models")
def test_a_dispatch_is_sent_to_the_commit_queue_once_when_its_last_round_closes(
    engine: Engine,
) -> None:
    # Given an independent dispatch of two models that endorse the thread's one head
    ledger = Ledger.new(engine, evidence_items=1)
    made = ledger.node("The replica keeps up", cites=list(ledger.evidence))
    uow, scheduler = uow_of(engine), Recorder()
    dispatch(uow, scheduler, ledger.thread_id, ["alpha", "beta"], mode="independent", rounds=1, actor=ACTOR)
    first, second = scheduler.runs
    # When the first run ends, the round still open
    assert execute_run(uow, scheduler, first).status == "succeeded"
    # Then nothing is sent to be evaluated yet
    assert scheduler.evaluations == []
    # And when the second run ends
    ended = execute_run(uow, scheduler, second)
    assert ended.status == "succeeded", ended.error
    # Then the round's version, which both endorsed, is sent once
    assert scheduler.evaluations == [made["version_id"]]
    # And a version a round's run made is the round's too, though no claim of its maker's is on it
    with unit_of_work(engine) as conn:
        revision = Nodes(pq(conn)).add_version(
            NewVersion(
                logical_node=made["logical_node_id"], content="The replica keeps up, mostly", run=first
            ),
            actor=ACTOR,
            held=True,
        )
        dispatch_id = conn.execute(
            text("SELECT dispatch_id FROM agent_runs WHERE id = :r"), {"r": first}
        ).scalar()
    sent = evaluate_closed_round(uow, Recorder(), dispatch_id, 1)
    assert sent == sorted([made["version_id"], revision.version_id])
