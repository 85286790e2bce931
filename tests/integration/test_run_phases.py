"""A run's phases as one SQL function each (issue 46 item 2): ``council_begin_run_v1`` claims
a run and reads what its request is compiled from in one statement, the same claim and the
same briefing as the statements it replaces; nothing claimed is a state, not an error.
Real Postgres; the agent is a real (offline) profile."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.ledger.unit import UnitOfWork
from council.services.execution import API_RUNTIMES, execute_run
from tests.engines import unit_of_work
from tests.fakes.openai_server import reply
from tests.integration.test_run_outcomes import (  # noqa: F401  (the autouse profile fixture)
    _dispatch,
    _fake_agent,
    _offline_profile_env,
    _thread,
    _valid_output,
    _written,
)
from tests.rows import query


@contextmanager
def _statements() -> Iterator[list[str]]:
    """Every statement psycopg sends meanwhile (any connection of this process)."""
    seen: list[str] = []
    execute = psycopg.Cursor.execute

    def counted(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(query))
        return execute(self, query, *args, **kwargs)

    psycopg.Cursor.execute = counted  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]


def test_begin_run_claims_and_reads_the_briefing_and_evidence_in_one_statement(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a dispatched API run whose round's briefing names three evidence items
    ledger, _ = _thread(engine)
    with _fake_agent(monkeypatch, tmp_path, [reply("unused")]):
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
    # When it is begun
    with uow() as tx, _statements() as sent:
        begun = tx.runs.begin(run_id, owner="w1", lease_s=60, api_runtimes=API_RUNTIMES)
    # Then one statement claimed it for attempt 1, and returned the round's stored briefing
    # and the text of each evidence item it names, as the statements it replaces read them
    assert len(sent) == 1
    assert begun.state == "claimed" and begun.run is not None
    run = begun.run
    assert (run.id, run.attempt, run.thread_id, run.round, run.request) == (
        run_id,
        1,
        ledger.thread_id,
        1,
        None,
    )
    assert (run.dispatch_rounds, run.agent_down, run.control_of) == (1, None, None)
    assert run.dispatch_id is not None
    with uow() as tx:
        assert begun.briefing == tx.rounds.of_round(run.dispatch_id, 1)
        assert begun.briefing is not None
        ids = [e.id for e in begun.briefing.packet.evidence]
        assert len(ids) == 3
        assert begun.evidence == tx.evidence.contents(ids)
        assert [(a.attempt, a.worker) for a in tx.runs.show(run_id).attempts] == [(1, "w1")]


def test_a_run_not_claimed_comes_back_as_its_state(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a run claimed by a live attempt
    ledger, heads = _thread(engine)
    answer = _valid_output(ledger, heads).model_dump_json()
    with _fake_agent(monkeypatch, tmp_path, [reply(answer)]):
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        with uow() as tx:
            assert tx.runs.begin(run_id, owner="w1", lease_s=60).state == "claimed"
        # When another worker begins it: leased; nothing claimed, nothing else read
        with uow() as tx:
            leased = tx.runs.begin(run_id, owner="w2", lease_s=60)
        assert (leased.state, leased.run, leased.briefing, leased.evidence) == ("leased", None, None, None)
        # and once the run has ended: done; a run that does not exist: missing
        assert execute_run(uow, Recorder(), run_id, owner="w3", held_attempt=1).status == "succeeded"
    with uow() as tx:
        assert tx.runs.begin(run_id, owner="w3", lease_s=60).state == "done"
        assert tx.runs.begin(ledger.thread_id, owner="w3", lease_s=60).state == "missing"
        attempts = [(a.attempt, a.worker, a.status) for a in tx.runs.show(run_id).attempts]
    assert attempts == [(1, "w1", "released"), (2, "w3", "succeeded")]


def test_end_run_keeps_the_answer_fences_and_reads_the_checks_facts_in_one_statement(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a claimed run of a thread with two propositions and three evidence items
    ledger, heads = _thread(engine)
    with _fake_agent(monkeypatch, tmp_path, [reply("unused")]):
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
    with uow() as tx:
        assert tx.runs.begin(run_id, owner="w1", lease_s=60).state == "claimed"
    unknown = uuid4()
    evidence = [UUID(str(e)) for e in ledger.evidence[:2]]
    # When attempt 1 ends with an answer, naming both propositions, an unknown version and
    # two evidence items of the thread and one of no thread
    with uow() as tx, _statements() as sent:
        ended = tx.runs.end(
            run_id, 1, answer=(0, "the answer"), versions=[*heads, unknown], evidence=[*evidence, unknown]
        )
        assert len(sent) == 1
        # Then the run is fenced and the facts are those the check's own reads find
        assert ended.run is not None and ended.facts is not None
        assert (ended.run.id, ended.run.attempt, ended.run.thread_id) == (run_id, 1, ledger.thread_id)
        assert ended.facts.attached == frozenset(evidence)
        assert sorted(ended.facts.claimable) == sorted(heads)
        for version_id, row in ended.facts.claimable.items():
            assert row["thread_id"] == ledger.thread_id and row["claimed_by_this_run"] is None
            assert row["id"] == version_id and row["branch_id"] is not None
    # And a zombie attempt's answer is kept, though it is fenced out: a result, not an error
    with uow() as tx:
        zombie = tx.runs.end(run_id, 7, answer=(0, "late"), versions=heads, evidence=evidence)
        assert (zombie.run, zombie.facts) == (None, None)
    with uow() as tx:
        kept = [(a.attempt, a.text) for a in tx.runs.show(run_id).answers]
    assert kept == [(1, "the answer"), (7, "late")]


def test_a_run_through_the_phase_functions_writes_every_record_it_wrote_before(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a run whose model answers one endorsement and one dispute, each citing evidence
    ledger, heads = _thread(engine)
    answer = _valid_output(ledger, heads).model_dump_json()
    with _fake_agent(monkeypatch, tmp_path, [reply(answer)]):
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        before = _written(engine)
        with unit_of_work(engine) as conn:
            last = query(conn, "SELECT coalesce(max(id), 0) AS m FROM events")[0]["m"]
        # When it is executed
        assert execute_run(uow, Recorder(), run_id).status == "succeeded"
    # Then it wrote the rows and events the statements before revision 0042 wrote (measured on
    # the code before it: the same tables, counts, event kinds in order and payload keys)
    after = _written(engine)
    assert {t: after[t] - before[t] for t in after if after[t] != before[t]} == {
        "answer_texts": 1,
        "citations": 2,
        "claims": 2,
        "events": 5,
        "run_answers": 1,
        "run_attempts": 2,
        "run_exposures": 2,
        "run_opened_evidence": 3,
    }
    with unit_of_work(engine) as conn:
        events = query(conn, "SELECT kind, subject_id, payload FROM events WHERE id > :m ORDER BY id", m=last)
        claims = query(conn, "SELECT id, node_version_id, confidence FROM claims WHERE run_id = :r", r=run_id)
    assert [(e["kind"], sorted(e["payload"])) for e in events] == [
        ("run.started", ["attempt", "exposures", "request_sha256"]),
        ("claim.added", ["citations", "claim_type", "confidence", "node_version_id", "run_id"]),
        ("claim.added", ["citations", "claim_type", "confidence", "node_version_id", "run_id"]),
        (
            "run.output_applied",
            ["claims", "evidence", "forks", "nodes", "pending_actions", "touched_versions", "versions"],
        ),
        ("run.succeeded", ["attempt", "lint_findings"]),
    ]
    # and each claim.added names its claim, with the confidence stored and one citation
    stored = {str(c["id"]): (str(c["node_version_id"]), float(c["confidence"])) for c in claims}
    announced = {
        e["subject_id"]: (e["payload"]["node_version_id"], e["payload"]["confidence"])
        for e in events
        if e["kind"] == "claim.added"
    }
    assert (
        announced
        == stored
        == {
            next(k for k, v in stored.items() if v[0] == str(heads[0])): (str(heads[0]), 0.8),
            next(k for k, v in stored.items() if v[0] == str(heads[1])): (str(heads[1]), 0.6),
        }
    )
    assert [e["payload"]["citations"] for e in events if e["kind"] == "claim.added"] == [1, 1]
