"""Review-mode runs vote on a retraction proposal and the council adjudicates
it on its own (docs/architecture.md §5, §7), against real Postgres. Runs are executed here
directly on the simulated provider; the scheduler only records."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.agents import gateway
from council.domain.agent_output import AgentOutput, ClaimOut, NewNode, VoteOut
from council.errors import BadInput
from council.ledger.apply_output import check_output
from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate
from council.services.dispatch import dispatch
from council.services.execution import execute_run
from council.services.retraction import propose_retraction
from council.services.reversal import change_validity
from tests.builders import ACTOR, Ledger
from tests.engines import pq, unit_of_work
from tests.rows import query, row, rows

AGENTS = ("claude", "codex", "glm")


@pytest.fixture(autouse=True)
def _simulated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COUNCIL_SIMULATE", "1")
    monkeypatch.setenv("COUNCIL_OFFLINE", "1")


def _two_contested(engine: Engine) -> tuple[Ledger, dict[UUID, UUID]]:
    """Two consolidated nodes resting on evidence[0] and evidence[1]; invalidating
    evidence[0] leaves each with one support group, so both get a proposal.
    Returns the ledger and {proposal id: consolidated node version}."""
    ledger = Ledger.new(engine)
    versions = [
        ledger.ready_node("SQLite parity suffices for the unit tier"),
        ledger.ready_node("WAL mode is safe for concurrent readers"),
    ]
    for version in versions:
        assert consolidate(ledger.uow, version, actor=ACTOR).outcome == "committed"
    result = change_validity(
        ledger.uow, None, ledger.evidence[0], action="invalidate", reason="fabricated", actor=ACTOR
    )
    assert len(result.proposals) == 2
    return ledger, {UUID(str(a.proposal_id)): a.node_version_id for a in result.affected}


def _review(uow: UnitOfWork, ledger: Ledger, proposal_id: UUID, agents: tuple[str, ...]) -> list[UUID]:
    recorder = Recorder()
    created = dispatch(
        uow,
        recorder,
        ledger.thread_id,
        agents,
        mode="review",
        rounds=1,
        actor=ACTOR,
        proposal=proposal_id,
    )
    assert recorder.runs == created.run_ids
    return list(created.run_ids)


def test_a_review_dispatch_votes_and_adjudicates_its_proposal_when_the_last_run_ends(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given two consolidations contested by the same invalidated evidence
    ledger, proposals = _two_contested(engine)
    target, other = sorted(proposals, key=str)
    # When claude, codex and glm review one of the proposals
    run_ids = _review(uow, ledger, target, AGENTS)
    results = [execute_run(uow, Recorder(), run_id, owner="test") for run_id in run_ids]
    # Then every run succeeded with exactly one vote, on that proposal, and claimed nothing
    assert [r.status for r in results] == ["succeeded"] * 3
    votes = rows(engine, "retraction_votes", "run_id = ANY(:v)", v=run_ids)
    assert sorted(v["run_id"] for v in votes) == sorted(run_ids)
    assert {v["proposal_id"] for v in votes} == {target}
    assert rows(engine, "claims", "run_id = ANY(:v)", v=run_ids) == []
    applied = rows(engine, "events", "kind = :v", v="run.output_applied")
    assert sorted(e["subject_id"] for e in applied) == sorted(str(r) for r in run_ids)
    assert all(e["payload"]["votes"] == 1 and e["payload"]["claims"] == 0 for e in applied)
    runs = rows(engine, "agent_runs", "id = ANY(:v)", v=run_ids)
    assert all(r["mode"] == "review" and r["proposal_id"] == target for r in runs)
    # And each run was shown the proposal, its content and its evidence with validity
    request = runs[0]["request"]["messages"][-1]["content"]
    assert str(target) in request and '"validity": "invalidated"' in request
    # And only the last run to end adjudicated it: retracted, under the pinned rules
    assert [r.adjudication is not None for r in results] == [False, False, True]
    assert results[-1].adjudication == "retracted"
    proposal = row(engine, "retraction_proposals", "id = :v", v=target)
    assert proposal["status"] == "retracted"
    version = proposals[target]
    memory = row(engine, "memory_items", "node_version_id = :v", v=version)
    assert memory["status"] == "retracted"
    consolidation = row(engine, "consolidations", "id = :v", v=proposal["consolidation_id"])
    assert consolidation["status"] == "retracted"
    state = row(engine, "node_version_states", "id = :v", v=version)
    assert state["status"] == "open"
    # And the other proposal is untouched: still open, its memory still contested
    assert row(engine, "retraction_proposals", "id = :v", v=other)["status"] == "open"
    other_memory = row(engine, "memory_items", "node_version_id = :v", v=proposals[other])
    assert other_memory["status"] == "contested"


def test_a_vote_on_another_proposal_fails_the_run_and_writes_nothing(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two open proposals and a review run dispatched for one of them
    ledger, proposals = _two_contested(engine)
    target, other = sorted(proposals, key=str)
    [run_id] = _review(uow, ledger, target, ("claude",))
    # When its model votes on the other proposal, before and after the re-prompt
    stray = AgentOutput(
        summary="[test] review: a vote on the wrong proposal.",
        votes=[VoteOut(proposal_id=str(other), vote="endorse", confidence=0.9)],
    ).model_dump_json()

    def complete(model: str, messages: Any, params: Any, **_: Any) -> gateway.Completion:
        return gateway.Completion(stray, {"prompt_tokens": 1}, None, model, True)

    monkeypatch.setattr(gateway, "complete", complete)
    result = execute_run(uow, Recorder(), run_id, owner="test")
    # Then the run failed with the reason, after one re-prompt
    assert result.status == "failed"
    run = row(engine, "agent_runs", "id = :v", v=run_id)
    assert run["status"] == "failed" and run["usage"]["calls"] == 2
    assert "votes[0].proposal_id: this run was not dispatched to review proposal" in run["error"]
    # And nothing was written: no vote, no applied output, both proposals still open
    assert rows(engine, "retraction_votes") == []
    assert rows(engine, "events", "kind = :v", v="run.output_applied") == []
    statuses = {p["id"]: p["status"] for p in rows(engine, "retraction_proposals")}
    assert statuses == {target: "open", other: "open"}
    # And its dispatch, complete without a vote, left the proposal pending
    assert result.adjudication == "pending"


def test_only_a_review_run_may_vote(engine: Engine) -> None:
    ledger, proposals = _two_contested(engine)
    proposal_id = next(iter(proposals))
    run_id = ledger.run("anthropic")  # an external run, not dispatched for a review
    output = AgentOutput(votes=[VoteOut(proposal_id=str(proposal_id), vote="endorse")])
    with unit_of_work(engine) as conn:
        run = row(conn, "agent_runs", "id = :v", v=run_id)
        with pytest.raises(BadInput, match="not dispatched to review"):
            check_output(pq(conn), run, output)


def test_with_its_evidence_intact_the_council_votes_to_keep(engine: Engine, uow: UnitOfWork) -> None:
    # Given a proposal opened by hand against a consolidation whose evidence is all valid
    ledger = Ledger.new(engine)
    version = ledger.ready_node()
    consolidation_id = consolidate(uow, version, actor=ACTOR).consolidation_id
    assert consolidation_id is not None
    proposal_id = propose_retraction(uow, consolidation_id, reason="a second look", actor=ACTOR).id
    # When the council reviews it
    run_ids = _review(uow, ledger, proposal_id, AGENTS)
    results = [execute_run(uow, Recorder(), run_id, owner="test") for run_id in run_ids]
    # Then nobody votes to retract, codex (the sceptic) votes to keep, and it is not retracted
    votes = {
        r["agent"]: r["vote"]
        for r in query(
            engine,
            "SELECT * FROM retraction_votes v JOIN agent_runs r ON r.id = v.run_id WHERE v.proposal_id = :id",
            id=proposal_id,
        )
    }
    assert set(votes) == set(AGENTS)
    assert "endorse" not in votes.values() and votes["codex"] == "dispute"
    assert results[-1].adjudication in ("restored", "pending")


def _answering(monkeypatch: pytest.MonkeyPatch, *answers: AgentOutput) -> list[Any]:
    """The model answers each call with the next of ``answers`` (the last repeats); the
    messages of every call are kept."""
    sent: list[Any] = []

    def complete(model: str, messages: Any, params: Any, **_: Any) -> gateway.Completion:
        answer = answers[min(len(sent), len(answers) - 1)]
        sent.append(messages)
        return gateway.Completion(answer.model_dump_json(), {"prompt_tokens": 1}, None, model, True)

    monkeypatch.setattr(gateway, "complete", complete)
    return sent


def test_a_review_answer_without_a_vote_is_re_prompted_with_the_reason_then_fails(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a review run of one proposal
    ledger, proposals = _two_contested(engine)
    target = sorted(proposals, key=str)[0]
    [run_id] = _review(uow, ledger, target, ("claude",))
    # When its model answers with a summary and no vote, before and after the re-prompt
    sent = _answering(monkeypatch, AgentOutput(summary="[test] I looked at it."))
    result = execute_run(uow, Recorder(), run_id, owner="test")
    # Then it was re-prompted once, with the reason, and failed with that reason
    reason = f"votes: a review run answers with its vote on retraction proposal {target}"
    assert len(sent) == 2 and reason in sent[1][-1]["content"]
    run = row(engine, "agent_runs", "id = :v", v=run_id)
    assert (result.status, run["status"], run["usage"]["calls"]) == ("failed", "failed", 2)
    assert reason in run["error"] and "this answer has none" in run["error"]
    # And nothing was written: no vote, no applied output; the dispatch ended and left it pending
    assert rows(engine, "retraction_votes") == []
    assert rows(engine, "events", "kind = :v", v="run.output_applied") == []
    assert result.adjudication == "pending"


def test_a_review_answer_that_claims_on_another_node_is_refused_and_touches_nothing(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a review run (codex: openai) of one proposal, and an unrelated node one
    # independent endorsement (anthropic) short of consolidating
    ledger, proposals = _two_contested(engine)
    target = sorted(proposals, key=str)[0]
    unrelated = UUID(str(ledger.node("Nightly VACUUM keeps the WAL small")["version_id"]))
    ledger.claim(ledger.run("anthropic"), unrelated, confidence=0.8, cites=[ledger.evidence[1]])
    [run_id] = _review(uow, ledger, target, ("codex",))
    # When its model answers, both times, with an endorsement of that node and no vote
    stray = ClaimOut(node_version_id=str(unrelated), type="endorse", confidence=0.9, rationale="Fits.")
    _answering(monkeypatch, AgentOutput(summary="[test] a claim instead of a vote.", claims=[stray]))
    recorder = Recorder()
    result = execute_run(uow, recorder, run_id, owner="test")
    # Then the run failed with the reason; it wrote no claim and queued no evaluation
    run = row(engine, "agent_runs", "id = :v", v=run_id)
    assert (result.status, run["status"]) == ("failed", "failed")
    assert "claims: a review run writes nothing outside its proposal" in run["error"]
    assert rows(engine, "claims", "run_id = :v", v=run_id) == []
    assert rows(engine, "claims", "node_version_id = :v", v=unrelated) != []  # the one before
    assert len(rows(engine, "claims", "node_version_id = :v", v=unrelated)) == 1
    assert recorder.evaluations == [] and result.touched_versions == []
    # And the unrelated node did not consolidate: it still has one support
    assert consolidate(uow, unrelated, actor=ACTOR).outcome == "not_ready"
    assert rows(engine, "consolidations", "node_version_id = :v", v=unrelated) == []


def test_a_review_answer_with_its_vote_and_more_is_re_prompted_and_only_the_vote_lands(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a review run of one proposal
    ledger, proposals = _two_contested(engine)
    target = sorted(proposals, key=str)[0]
    [run_id] = _review(uow, ledger, target, ("glm",))
    vote = VoteOut(proposal_id=str(target), vote="endorse", confidence=0.8, rationale="Its evidence fell.")
    # When its model first votes and also proposes a node, then, re-prompted, only votes
    sent = _answering(
        monkeypatch,
        AgentOutput(votes=[vote], new_nodes=[NewNode(ref="aside", content="SQLite needs WAL for this")]),
        AgentOutput(votes=[vote]),
    )
    result = execute_run(uow, Recorder(), run_id, owner="test")
    # Then the re-prompt named what lies outside its proposal, and only the vote was written
    assert "new_nodes: a review run writes nothing outside its proposal" in sent[1][-1]["content"]
    assert result.status == "succeeded"
    [cast] = rows(engine, "retraction_votes", "run_id = :v", v=run_id)
    assert (cast["proposal_id"], cast["vote"]) == (target, "endorse")
    assert rows(engine, "node_versions", "created_by_run_id = :v", v=run_id) == []
