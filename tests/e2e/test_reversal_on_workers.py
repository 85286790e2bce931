"""Governed reversal end to end on real Celery workers, Redis and Postgres
(docs/architecture.md §5, §7): evidence is invalidated through the CLI, the periodic
re-verification sweep dispatches a review, the simulated council votes, and
the last review run adjudicates the proposal.
"""

from __future__ import annotations

from collections import Counter

from sqlalchemy import Engine

from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate
from tests.builders import ACTOR, Ledger
from tests.conftest import CliRunner
from tests.e2e.conftest import Workers, rows, wait_for

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


def test_invalidated_evidence_is_reviewed_and_retracted_by_the_workers_on_their_own(
    engine: Engine, uow: UnitOfWork, workers: Workers, cli: CliRunner, redis_url: str
) -> None:
    # Given a consolidated node resting on two evidence items, and workers with the periodic sweeps
    ledger = Ledger.new(engine)
    version = ledger.ready_node("SQLite parity suffices for the unit tier")
    assert consolidate(uow, version, actor=ACTOR).outcome == "committed"
    workers("--queues", "runs,commit,maintenance", "--beat", env={"COUNCIL_REVERIFY_EVERY_S": "2"})
    # When its decisive evidence is invalidated through the CLI
    invalidated = cli(
        "evidence",
        "invalidate",
        str(ledger.evidence[0]),
        "--reason",
        "the benchmark was fabricated",
        "--json",
        env={"COUNCIL_BROKER_URL": redis_url},
    )
    assert invalidated.code == 0, invalidated.stderr
    [proposal_id] = invalidated.json()["proposals"]
    # Then the sweep dispatches a review and the council's votes adjudicate the proposal
    wait_for(
        lambda: (
            rows(engine, "SELECT status FROM retraction_proposals WHERE id = :p", p=proposal_id)[0].status
            != "open"
        ),
        120,
        "the proposal to be adjudicated",
    )
    [proposal] = rows(engine, "SELECT status FROM retraction_proposals WHERE id = :p", p=proposal_id)
    assert proposal.status == "retracted"
    [dispatch] = rows(
        engine, "SELECT id, mode, agents, rounds FROM dispatches WHERE proposal_id = :p", p=proposal_id
    )
    assert (dispatch.mode, sorted(dispatch.agents), dispatch.rounds) == (
        "review",
        ["claude", "codex", "glm"],
        1,
    )
    runs = rows(engine, "SELECT id, status FROM agent_runs WHERE dispatch_id = :d", d=dispatch.id)
    assert sorted(r.status for r in runs) == ["succeeded"] * 3
    votes = rows(engine, "SELECT run_id FROM retraction_votes WHERE proposal_id = :p", p=proposal_id)
    assert sorted(str(v.run_id) for v in votes) == sorted(str(r.id) for r in runs)
    # And the memory is retracted and the node version open again
    [memory] = rows(engine, "SELECT status FROM memory_items WHERE node_version_id = :v", v=version)
    assert memory.status == "retracted"
    [state] = rows(engine, "SELECT status FROM node_version_states WHERE id = :v", v=version)
    assert state.status == "open"
    # And the thread's event log holds the whole trail, in order
    events = cli("events", "--thread", str(ledger.thread_id), "--json")
    assert events.code == 0, events.stderr
    kinds = [e["kind"] for e in events.json()["items"] if e["kind"] in TRAIL]
    counts = Counter(kinds)
    assert counts == {
        "evidence.invalidated": 1,
        "memory.contested": 1,
        "retraction.proposed": 1,
        "dispatch.created": 1,
        "run.succeeded": 3,
        "retraction.voted": 3,
        "retraction.retracted": 1,
        "memory.retracted": 1,
    }
    assert kinds[:4] == list(TRAIL[:4])
    assert sorted(kinds[4:10]) == ["retraction.voted"] * 3 + ["run.succeeded"] * 3
    assert sorted(kinds[10:]) == ["memory.retracted", "retraction.retracted"]  # one transaction
