"""Who reviews a retraction proposal (docs/architecture.md §5 and §7), against real
Postgres: the automatic review goes to the profiles that worked the thread, or to the
reviewers its setting names, never a simulated voter beside real ones; with nobody
qualified the proposal stays for a manual review and an event says why.

"Real" profiles here are served by a local model that reads its briefing
(``tests.fakes.chat_model``); ``glm`` keeps its default, simulated for want of its key."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.agents import gateway
from council.domain.agent_output import AgentOutput, CitationOut, ClaimOut
from council.errors import BadInput
from council.ledger.unit import UnitOfWork
from council.services.budgets import set_thread_budget
from council.services.consolidation import consolidate
from council.services.dispatch import dispatch
from council.services.execution import execute_run
from council.services.retraction import propose_retraction
from council.services.reversal import reverify
from council.services.threads import review_settings, set_review
from tests.builders import ACTOR, Ledger
from tests.conftest import CliRunner
from tests.fakes.chat_model import chat_model, local_profiles
from tests.rows import rows

UNSTAFFED = "retraction.review_unstaffed"
UNFUNDED = "retraction.review_unfunded"


@pytest.fixture(autouse=True)
def _profiles(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """alpha and beta: real profiles served by the local reading model; the defaults
    (claude, codex, glm) simulated here, their keys unset."""
    for name in (
        "COUNCIL_SIMULATE",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "ZAI_API_KEY",
        "OPENROUTER_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COUNCIL_HOME", str(tmp_path))
    with chat_model() as (url, _):
        monkeypatch.setenv("COUNCIL_PROFILES", str(local_profiles(tmp_path / "p.toml", url, "alpha", "beta")))
        yield url


def _proposal(ledger: Ledger) -> UUID:
    """A consolidated node of the thread (two recorded real runs) and a proposal to retract it."""
    consolidation = consolidate(ledger.uow, ledger.ready_node(), actor=ACTOR).consolidation_id
    assert consolidation is not None
    return propose_retraction(ledger.uow, consolidation, reason="a second look", actor=ACTOR).id


def _work(uow: UnitOfWork, ledger: Ledger, agents: tuple[str, ...]) -> None:
    """The agents work the thread: one independent round, executed here to the end."""
    made = dispatch(uow, Recorder(), ledger.thread_id, agents, mode="independent", rounds=1, actor=ACTOR)
    for run_id in made.run_ids:
        assert execute_run(uow, Recorder(), run_id, owner="test").status == "succeeded"


def _review_dispatch(engine: Engine, proposal_id: UUID) -> tuple[Any, list[Any], dict[str, Any]]:
    """The proposal's review dispatch, its runs, and its event's payload."""
    [made] = rows(engine, "dispatches", "proposal_id = :v", v=proposal_id)
    runs = rows(engine, "agent_runs", "dispatch_id = :v", v=made["id"])
    [event] = rows(engine, "events", "kind = :v AND subject_id = :w", v="dispatch.created", w=str(made["id"]))
    return made, runs, event["payload"]


def _unstaffed(engine: Engine, proposal_id: UUID) -> list[dict[str, Any]]:
    found = rows(engine, "events", "kind = :v AND subject_id = :w", v=UNSTAFFED, w=str(proposal_id))
    return [e["payload"] for e in found]


def test_the_review_goes_to_the_real_profiles_that_worked_the_thread_and_no_simulated_one(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given a thread worked by alpha and beta (real) and by glm (simulated here), and a proposal
    ledger = Ledger.new(engine)
    proposal_id = _proposal(ledger)
    _work(uow, ledger, ("alpha", "beta", "glm"))
    # When the re-verification sweep dispatches its review
    recorder = Recorder()
    result = reverify(uow, recorder)
    # Then exactly alpha and beta review it, both real; glm is left out with the reason
    made, runs, payload = _review_dispatch(engine, proposal_id)
    assert result.dispatched == [made["id"]] and result.unstaffed == []
    assert (made["mode"], made["agents"]) == ("review", ["alpha", "beta"])
    assert sorted((r["agent"], r["simulated"], r["model"]) for r in runs) == [
        ("alpha", False, "openai/alpha-model"),
        ("beta", False, "openai/beta-model"),
    ]
    assert payload["simulated"] == []
    reviewers = payload["reviewers"]
    assert (reviewers["source"], reviewers["agents"], reviewers["simulated"]) == (
        "thread",
        ["alpha", "beta"],
        False,
    )
    [left] = reviewers["left_out"]
    assert left["agent"] == "glm"
    assert left["reason"] == (
        "would run simulated (ZAI_API_KEY is unset); a simulated voter never votes beside real ones"
    )
    # And the two real reviewers vote on the proposal through the local model, and nothing else
    for run_id in recorder.runs:
        assert execute_run(uow, Recorder(), run_id, owner="test").status == "succeeded"
    votes = rows(engine, "retraction_votes", "proposal_id = :v", v=proposal_id)
    assert sorted(v["run_id"] for v in votes) == sorted(r["id"] for r in runs)
    assert rows(engine, "claims", "run_id = ANY(:v)", v=[r["id"] for r in runs]) == []


def test_the_threads_setting_names_its_reviewers_with_history(engine: Engine, uow: UnitOfWork) -> None:
    # Given a thread worked by alpha and beta whose setting names beta alone as its reviewer
    ledger = Ledger.new(engine)
    proposal_id = _proposal(ledger)
    _work(uow, ledger, ("alpha", "beta"))
    set_review(uow, ledger.thread_id, agents="beta", actor="alice", reason="beta knows SQLite")
    # When the sweep dispatches the review
    reverify(uow, Recorder())
    # Then beta alone reviews it, as the setting says
    made, _, payload = _review_dispatch(engine, proposal_id)
    assert made["agents"] == ["beta"] and payload["reviewers"]["source"] == "setting"
    # And the setting's history says who changed it and why; `thread` goes back to the default
    settings = set_review(uow, ledger.thread_id, agents="thread", actor="bob")
    assert [(h.review, h.agents, h.actor) for h in settings.history] == [
        ("auto", None, "test"),
        ("auto", ["beta"], "alice"),
        ("auto", None, "bob"),
    ]
    assert settings.current.description == "automatic review by the profiles that worked the thread"
    assert review_settings(uow, ledger.thread_id).history[1].description == "automatic review by beta"


def test_a_review_setting_keeps_the_reviewers_when_the_mode_changes_and_refuses_unknown_ones(
    engine: Engine, uow: UnitOfWork
) -> None:
    ledger = Ledger.new(engine)
    set_review(uow, ledger.thread_id, agents="alpha,beta", actor=ACTOR)
    settings = set_review(uow, ledger.thread_id, "10m", actor=ACTOR)
    assert (settings.current.review, settings.current.agents) == ("delayed", ["alpha", "beta"])
    assert settings.current.description == "automatic review after 10m by alpha, beta"
    for bad, reason in (
        ("alpha,nobody", "unknown agent profile 'nobody'"),
        ("alpha,alpha", "each agent may be named once"),
        ("alpha,", "agents must be profile names separated by commas"),
    ):
        with pytest.raises(BadInput, match=reason):
            set_review(uow, ledger.thread_id, agents=bad, actor=ACTOR)
    with pytest.raises(BadInput, match="give the review setting, the reviewers"):
        set_review(uow, ledger.thread_id, actor=ACTOR)
    assert len(review_settings(uow, ledger.thread_id).history) == 3


def test_with_no_profile_that_worked_it_a_proposal_stays_for_a_manual_review_with_the_reason(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given a proposal on a thread whose runs were all recorded by hand (real, none of the workers)
    ledger = Ledger.new(engine)
    proposal_id = _proposal(ledger)
    # When the sweep looks for its reviewers
    recorder = Recorder()
    first = reverify(uow, recorder)
    # Then nothing is dispatched and an event says why the proposal waits for people
    assert (first.dispatched, first.unstaffed, recorder.runs) == ([], [proposal_id], [])
    assert rows(engine, "dispatches", "proposal_id = :v", v=proposal_id) == []
    [told] = _unstaffed(engine, proposal_id)
    [created] = rows(engine, "thread_review_settings", "thread_id = :v", v=ledger.thread_id)
    assert told["setting_id"] == str(created["id"])  # found under the setting in force
    assert (
        told["reason"] == "no agent profile worked this thread (no worker run answered on it outside review)"
    )
    # And the next sweeps neither repeat it nor keep the proposal in their queue
    assert reverify(uow, recorder).unstaffed == [] and len(_unstaffed(engine, proposal_id)) == 1
    # And naming reviewers that would run simulated on this real thread leaves it waiting, with why
    set_review(uow, ledger.thread_id, agents="glm", actor=ACTOR)
    assert reverify(uow, recorder).unstaffed == [proposal_id]
    told = _unstaffed(engine, proposal_id)[-1]
    assert told["reason"] == (
        "no profile qualifies: glm: would run simulated (ZAI_API_KEY is unset); "
        "the thread's own runs were real"
    )
    # And naming a real one dispatches its review
    set_review(uow, ledger.thread_id, agents="alpha", actor=ACTOR)
    again = reverify(uow, recorder)
    assert len(again.dispatched) == 1 and again.unstaffed == []
    assert _review_dispatch(engine, proposal_id)[0]["agents"] == ["alpha"]


def test_a_simulated_thread_is_reviewed_by_its_simulated_profiles(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a thread worked only by simulated claude and codex, whose endorsements consolidated a node
    monkeypatch.setenv("COUNCIL_SIMULATE", "always")
    ledger = Ledger.new(engine)
    node = ledger.node("SQLite parity is sufficient for tests", cites=ledger.evidence[:2])  # in the briefing
    version = UUID(str(node["version_id"]))
    cited = {"council-sim/claude": ledger.evidence[0], "council-sim/codex": ledger.evidence[1]}

    def complete(model: str, messages: Any, params: Any, **_: Any) -> gateway.Completion:
        claim = ClaimOut(
            node_version_id=str(version),
            type="endorse",
            confidence=0.8,
            cites=[CitationOut(evidence_id=str(cited[model]))],
        )
        return gateway.Completion(AgentOutput(claims=[claim]).model_dump_json(), None, None, model, True)

    with monkeypatch.context() as patched:
        patched.setattr(gateway, "complete", complete)
        _work(uow, ledger, ("claude", "codex"))
    consolidation = consolidate(uow, version, actor=ACTOR).consolidation_id
    assert consolidation is not None
    proposal_id = propose_retraction(uow, consolidation, reason="a second look", actor=ACTOR).id
    # When the sweep dispatches its review
    reverify(uow, Recorder())
    # Then its own simulated profiles review it, and nothing real beside them
    made, runs, payload = _review_dispatch(engine, proposal_id)
    assert made["agents"] == ["claude", "codex"]
    assert all(r["simulated"] for r in runs)
    assert payload["reviewers"]["simulated"] is True and payload["reviewers"]["left_out"] == []


def test_concurrent_sweeps_tell_once_that_a_proposal_has_no_reviewer(engine: Engine, uow: UnitOfWork) -> None:
    # Given a proposal on a thread no profile worked
    ledger = Ledger.new(engine)
    proposal_id = _proposal(ledger)
    # When eight sweeps look for its reviewers at once, each on its own connection
    barrier = threading.Barrier(8)
    told: list[UUID] = []
    errors: list[BaseException] = []

    def sweep() -> None:
        try:
            barrier.wait()
            told.extend(reverify(uow, Recorder()).unstaffed)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=sweep) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    # Then one of them told it, once, and none dispatched a review
    assert errors == [] and told == [proposal_id]
    assert len(_unstaffed(engine, proposal_id)) == 1
    assert rows(engine, "dispatches", "proposal_id = :v", v=proposal_id) == []


def test_a_review_dispatched_by_hand_goes_to_the_threads_reviewers_by_default(
    engine: Engine, uow: UnitOfWork, cli: CliRunner, redis_url: str
) -> None:
    # Given a thread worked by alpha and beta (real) and glm (simulated here), and a proposal
    ledger = Ledger.new(engine)
    proposal_id = _proposal(ledger)
    _work(uow, ledger, ("alpha", "beta", "glm"))
    # When a person dispatches its review without naming agents
    env = {"COUNCIL_PROFILES": os.environ["COUNCIL_PROFILES"], "COUNCIL_BROKER_URL": redis_url}
    done = cli(
        "dispatch", "--thread", str(ledger.thread_id), "--mode", "review", "--proposal", str(proposal_id),
        "--json", env=env,
    )  # fmt: skip
    # Then it goes to the agents the automatic review would choose, never claude, codex and glm
    assert done.code == 0, done.stderr
    assert done.json()["agents"] == ["alpha", "beta"]
    made, _, _ = _review_dispatch(engine, proposal_id)
    assert made["agents"] == ["alpha", "beta"]


def test_a_review_the_threads_budget_refuses_is_told_once_and_holds_up_no_other_proposal(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given two threads worked by alpha and beta, each with a proposal, the older one's
    # thread under a budget its reviewers cannot be reserved under (their model has no price)
    funded_out, funded = Ledger.new(engine), Ledger.new(engine)
    refused_proposal = _proposal(funded_out)
    funded_proposal = _proposal(funded)
    for ledger in (funded_out, funded):
        _work(uow, ledger, ("alpha", "beta"))
    set_thread_budget(uow, funded_out.thread_id, 5, actor="alice", reason="cap")
    # When the sweep takes one proposal at a time
    first = reverify(uow, Recorder(), limit=1)
    second = reverify(uow, Recorder(), limit=1)
    # Then the refused review is told once, with the budget's reason, and dispatches nothing
    assert first.unfunded == [refused_proposal] and first.dispatched == []
    [told] = rows(engine, "events", "kind = :v AND subject_id = :w", v=UNFUNDED, w=str(refused_proposal))
    assert told["payload"]["reason"].startswith("budget: agent alpha's model openai/alpha-model has no price")
    assert rows(engine, "dispatches", "proposal_id = :v", v=refused_proposal) == []
    # And the next sweep goes on to the other thread's proposal instead of trying it again
    made, _, _ = _review_dispatch(engine, funded_proposal)
    assert second.dispatched == [made["id"]] and second.unfunded == []
    assert reverify(uow, Recorder()).unfunded == []
    # And once the budget changes, the refused proposal is due again and its review is sent
    set_thread_budget(uow, funded_out.thread_id, None, clear=True, actor="alice", reason="lifted")
    again = reverify(uow, Recorder())
    made, _, _ = _review_dispatch(engine, refused_proposal)
    assert again.dispatched == [made["id"]]
    assert (
        len(rows(engine, "events", "kind = :v AND subject_id = :w", v=UNFUNDED, w=str(refused_proposal))) == 1
    )
