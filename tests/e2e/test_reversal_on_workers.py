"""Governed reversal end to end on real Celery workers, Redis and Postgres
(docs/architecture.md §5, §7): evidence is invalidated through the CLI, the periodic
re-verification sweep dispatches a review to the profiles that worked the thread —
the real ones, never a simulated voter beside them — they vote, and the last review
run adjudicates the proposal.

The real profiles (alpha, beta) are served by a local model that reads its briefing
(``tests.fakes.chat_model``); glm keeps its default, simulated for want of its key.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sqlalchemy import Engine

from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate
from tests.builders import ACTOR, Ledger
from tests.conftest import CliRunner
from tests.e2e.conftest import Workers, rows, wait_for
from tests.fakes.chat_model import chat_model, local_profiles, proposal_in

# The real-worker fixtures, shared with the run tests.

TRAIL = (
    "evidence.invalidated",
    "memory.contested",
    "retraction.proposed",
    "dispatch.created",
    "run.succeeded",
    "retraction.voted",
    "retraction.retracted",
    "memory.retracted",
)
NO_KEYS = {name: "" for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZAI_API_KEY", "OPENROUTER_API_KEY")}


def test_invalidated_evidence_is_reviewed_by_the_threads_own_agents_and_retracted_by_the_workers(
    engine: Engine, uow: UnitOfWork, workers: Workers, cli: CliRunner, redis_url: str, tmp_path: Path
) -> None:
    # Given a consolidated node resting on two evidence items
    ledger = Ledger.new(engine)
    version = ledger.ready_node("SQLite parity suffices for the unit tier")
    assert consolidate(uow, version, actor=ACTOR).outcome == "committed"
    with chat_model(vote="endorse") as (url, model):
        profiles = local_profiles(tmp_path / "profiles.toml", url, "alpha", "beta")
        env = {"COUNCIL_PROFILES": str(profiles), "COUNCIL_SIMULATE": "auto", **NO_KEYS}
        # And workers with the periodic sweeps, where alpha and beta run real and glm simulated
        workers("--queues", "runs,commit,maintenance", "--beat", env={**env, "COUNCIL_REVERIFY_EVERY_S": "2"})
        # And the thread worked by alpha, beta and glm on those workers
        cli_env = {**env, "COUNCIL_BROKER_URL": redis_url}
        worked = cli(
            "dispatch", "--thread", str(ledger.thread_id), "--agents", "alpha,beta,glm", "--wait", "--json",
            env=cli_env, timeout=240,
        )  # fmt: skip
        assert worked.code == 0, worked.stderr
        assert worked.json()["simulated"] == ["glm"]
        assert sorted(r["status"] for r in worked.json()["runs"]) == ["succeeded"] * 3
        # When its decisive evidence is invalidated through the CLI
        invalidated = cli(
            "evidence",
            "invalidate",
            str(ledger.evidence[0]),
            "--reason",
            "the benchmark was fabricated",
            "--json",
            env=cli_env,
        )
        assert invalidated.code == 0, invalidated.stderr
        [proposal_id] = invalidated.json()["proposals"]
        # Then the sweep dispatches a review and the reviewers' votes adjudicate the proposal
        wait_for(
            lambda: (
                rows(engine, "SELECT status FROM retraction_proposals WHERE id = :p", p=proposal_id)[0].status
                != "open"
            ),
            120,
            "the proposal to be adjudicated",
        )
        reviews_asked = [r for r in model.model_calls() if proposal_in(r["json"]["messages"]) == proposal_id]
    [proposal] = rows(engine, "SELECT status FROM retraction_proposals WHERE id = :p", p=proposal_id)
    assert proposal.status == "retracted"
    # And exactly the thread's real profiles reviewed it, through the model: no simulated glm
    [dispatch] = rows(
        engine, "SELECT id, mode, agents, rounds FROM dispatches WHERE proposal_id = :p", p=proposal_id
    )
    assert (dispatch.mode, dispatch.agents, dispatch.rounds) == ("review", ["alpha", "beta"], 1)
    runs = rows(
        engine, "SELECT id, agent, status, simulated FROM agent_runs WHERE dispatch_id = :d", d=dispatch.id
    )
    assert sorted((r.agent, r.status, r.simulated) for r in runs) == [
        ("alpha", "succeeded", False),
        ("beta", "succeeded", False),
    ]
    assert len(reviews_asked) == 2
    votes = rows(engine, "SELECT run_id FROM retraction_votes WHERE proposal_id = :p", p=proposal_id)
    assert sorted(str(v.run_id) for v in votes) == sorted(str(r.id) for r in runs)
    [chosen] = rows(
        engine,
        "SELECT payload FROM events WHERE kind = 'dispatch.created' AND subject_id = :d",
        d=str(dispatch.id),
    )
    assert [o["agent"] for o in chosen.payload["reviewers"]["left_out"]] == ["glm"]
    # And the memory is retracted and the node version open again
    [memory] = rows(engine, "SELECT status FROM memory_items WHERE node_version_id = :v", v=version)
    assert memory.status == "retracted"
    [state] = rows(engine, "SELECT status FROM node_version_states WHERE id = :v", v=version)
    assert state.status == "open"
    # And the thread's event log holds the whole trail from the invalidation on, in order
    events = cli("events", "--thread", str(ledger.thread_id), "--json")
    assert events.code == 0, events.stderr
    kinds = [e["kind"] for e in events.json()["items"] if e["kind"] in TRAIL]
    kinds = kinds[kinds.index("evidence.invalidated") :]
    assert Counter(kinds) == {
        "evidence.invalidated": 1,
        "memory.contested": 1,
        "retraction.proposed": 1,
        "dispatch.created": 1,
        "run.succeeded": 2,
        "retraction.voted": 2,
        "retraction.retracted": 1,
        "memory.retracted": 1,
    }
    assert kinds[:4] == list(TRAIL[:4])
    assert sorted(kinds[4:8]) == ["retraction.voted"] * 2 + ["run.succeeded"] * 2
    assert sorted(kinds[8:]) == ["memory.retracted", "retraction.retracted"]  # one transaction
