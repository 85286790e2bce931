"""Claims only from where they should come (issue 29 part 5, docs/architecture.md §7): `claim add` and
``POST /runs/{id}/claims`` take claims only on a run recorded by hand; a worker's run, a
failed run and a run held by an MCP session are refused with a reason, nothing written;
and in the database a run's status moves only forward, a finished run never changes.
Real Postgres; the CLI in its own process; the API through its app."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.domain.commands import RecordedRun
from council.errors import BadInput
from council.ledger.unit import UnitOfWork
from council.services.execution import execute_run
from council.services.outside import begin_run, end_sessions, submit_output
from council.web.app import create_app
from council.web.security import Policy
from tests.builders import Ledger
from tests.conftest import CliRunner
from tests.engines import unit_of_work

TOKEN = "claims-write-token-0123456789"


def _count(engine: Engine, sql: str) -> int:
    with unit_of_work(engine) as conn:
        return int(conn.execute(text(sql)).scalar_one())


def _runs(engine: Engine, uow: UnitOfWork) -> tuple[Ledger, str, dict[str, UUID]]:
    """A thread with one node, and a run of each kind that must take no claim by hand."""
    ledger = Ledger.new(engine, evidence_items=1)
    version = str(ledger.node("A proposition", cites=[ledger.evidence[0]])["version_id"])
    worker_run = ledger.dispatched("claude")
    assert execute_run(uow, Recorder(), worker_run).status == "succeeded"
    queued_run = ledger.dispatched("codex")
    held = begin_run(
        uow, RecordedRun(ledger.thread_id, "outside", "openai/gpt-5"), holder="session-a", actor="t"
    )
    gone = begin_run(
        uow, RecordedRun(ledger.thread_id, "vanished", "openai/gpt-5"), holder="session-b", actor="t"
    )
    end_sessions(uow, ["session-b"])
    runs = {
        "succeeded worker": worker_run,
        "queued worker": queued_run,
        "MCP-held": held.id,
        "failed": gone.id,
    }
    return ledger, version, runs


def test_claims_by_hand_are_refused_on_worker_failed_and_mcp_held_runs_on_the_cli_and_the_api(
    engine: Engine, uow: UnitOfWork, db_url: str, cli: CliRunner
) -> None:
    # Given runs a person must not claim for
    ledger, version, runs = _runs(engine, uow)
    before = _count(engine, "SELECT count(*) FROM claims"), _count(engine, "SELECT count(*) FROM events")
    app = create_app(bootstrap(db_url, scheduler=lambda uow: Recorder()), policy=Policy(write_token=TOKEN))
    with TestClient(app, base_url="http://127.0.0.1", headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        for what, run_id in runs.items():
            # When a claim is added by hand, on the CLI and over HTTP
            done = cli("claim", "add", "--run", str(run_id), "--node", version, "--type", "endorse", "--json")
            posted = client.post(
                f"/runs/{run_id}/claims", json={"node_version_id": version, "type": "endorse"}
            )
            # Then each is refused with its reason, exit 2 / HTTP 422
            assert done.code == 2, (what, done.stdout, done.stderr)
            assert str(run_id) in done.stderr and "\n" not in done.stderr.strip(), what
            assert posted.status_code == 422, (what, posted.text)
    # And nothing was written
    after = _count(engine, "SELECT count(*) FROM claims"), _count(engine, "SELECT count(*) FROM events")
    assert after == before
    # While a run recorded by hand still takes its claims
    recorded = cli(
        "run", "record", "--thread", str(ledger.thread_id), "--agent", "me", "--model", "m", "--json"
    )
    ok = cli("claim", "add", "--run", recorded.json()["id"], "--node", version, "--type", "endorse", "--json")
    assert ok.code == 0, ok.stderr


def test_a_recorded_run_takes_claims_from_its_recorder_until_it_is_closed(
    engine: Engine, db_url: str, cli: CliRunner
) -> None:
    # Given a run recorded by hand: open, held by its recorder
    ledger = Ledger.new(engine, evidence_items=1)
    first, second = (str(ledger.node(c, cites=[ledger.evidence[0]])["version_id"]) for c in ("One", "Two"))
    me = {"COUNCIL_ACTOR": "alice"}
    recorded = cli(
        "run", "record", "--thread", str(ledger.thread_id), "--agent", "me", "--model", "m", "--json", env=me
    )
    assert recorded.code == 0, recorded.stderr
    run_id = recorded.json()["id"]
    assert recorded.json()["status"] == "running"
    # When someone else adds a claim to it, it is refused; its recorder's claim lands
    other = cli(
        "claim", "add", "--run", run_id, "--node", first, "--type", "endorse", env={"COUNCIL_ACTOR": "bob"}
    )
    assert other.code == 2 and "only its recorder" in other.stderr, other.stderr
    mine = cli("claim", "add", "--run", run_id, "--node", first, "--type", "endorse", "--json", env=me)
    assert mine.code == 0, mine.stderr
    # And someone else cannot close it; its recorder can
    assert cli("run", "close", run_id, env={"COUNCIL_ACTOR": "bob"}).code == 2
    closed = cli("run", "close", run_id, "--json", env=me)
    assert closed.code == 0, closed.stderr
    assert (closed.json()["status"], closed.json()["claims"]) == ("succeeded", 1)
    # Then the closed run takes no more claims, on the CLI or over HTTP, and closes once
    before = _count(engine, "SELECT count(*) FROM claims"), _count(engine, "SELECT count(*) FROM events")
    late = cli("claim", "add", "--run", run_id, "--node", second, "--type", "endorse", env=me)
    assert late.code == 2 and "is closed" in late.stderr, late.stderr
    assert cli("run", "close", run_id, env=me).code == 2
    app = create_app(bootstrap(db_url, scheduler=lambda uow: Recorder()), policy=Policy(write_token=TOKEN))
    with TestClient(app, base_url="http://127.0.0.1", headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        posted = client.post(f"/runs/{run_id}/claims", json={"node_version_id": second, "type": "endorse"})
        assert posted.status_code == 422, posted.text
        # And over HTTP a run recorded there is closed there (the API's actor is its recorder)
        made = client.post(f"/threads/{ledger.thread_id}/runs", json={"agent": "api", "model": "m"})
        assert made.status_code == 201 and made.json()["status"] == "running", made.text
        claim = client.post(
            f"/runs/{made.json()['id']}/claims", json={"node_version_id": second, "type": "endorse"}
        )
        assert claim.status_code == 201, claim.text
        shut = client.post(f"/runs/{made.json()['id']}/close")
        assert shut.status_code == 200 and shut.json()["claims"] == 1, shut.text
    after = _count(engine, "SELECT count(*) FROM claims"), _count(engine, "SELECT count(*) FROM events")
    assert after[0] == before[0] + 1  # the API run's one claim, nothing on the closed run


def test_an_mcp_run_takes_its_output_only_from_the_session_that_holds_it(
    engine: Engine, uow: UnitOfWork
) -> None:
    _, version, runs = _runs(engine, uow)
    output: dict[str, Any] = {
        "summary": "endorse",
        "claims": [{"node_version_id": version, "type": "endorse", "confidence": 0.7, "rationale": "r"}],
    }
    before = _count(engine, "SELECT count(*) FROM claims")
    # (another session's run; a run failed when its own session ended; a worker's run, over or
    # not yet claimed: each refused whichever session asks, with the run named)
    attempts = (
        ("session-x", runs["MCP-held"], "not one this session began"),
        ("session-b", runs["failed"], "has ended (failed)"),
        ("session-a", runs["succeeded worker"], "has ended (succeeded)"),
        ("session-a", runs["queued worker"], "not one this session began"),
    )
    for holder, run_id, reason in attempts:
        with pytest.raises(BadInput) as refused:
            submit_output(uow, Recorder(), run_id, output, holder=holder)
        assert str(run_id) in str(refused.value) and reason in str(refused.value)
    assert _count(engine, "SELECT count(*) FROM claims") == before


@pytest.mark.parametrize(
    ("status", "to"),
    [("succeeded", "running"), ("succeeded", "failed"), ("failed", "succeeded"), ("queued", "created")],
)
def test_a_run_status_never_moves_backwards_as_the_app_role(
    engine: Engine, uow: UnitOfWork, status: str, to: str
) -> None:
    # Given a run in `status`
    _, _, runs = _runs(engine, uow)
    run_id = {
        "succeeded": runs["succeeded worker"],
        "failed": runs["failed"],
        "queued": runs["queued worker"],
    }[status]
    with unit_of_work(engine) as conn:
        assert (
            conn.execute(text("SELECT status FROM agent_runs WHERE id = :id"), {"id": run_id}).scalar()
            == status
        )
    # When the application role moves it backwards, then it is refused by the database
    with pytest.raises(DBAPIError) as refused, engine.begin() as conn:
        conn.execute(text("UPDATE agent_runs SET status = :to WHERE id = :id"), {"to": to, "id": run_id})
    assert isinstance(refused.value.orig, psycopg.Error)


@pytest.mark.parametrize(
    "assignment",
    [
        "usage = '{\"calls\": 99}'::jsonb",
        "cost_usd = 12.5",  # a simulated run records 0 since the cost work: a change, not a no-op
        'lint_findings = \'[{"word": "x"}]\'::jsonb',
        "error = 'x'",
    ],
)
def test_a_finished_run_is_never_rewritten_as_the_app_role(
    engine: Engine, uow: UnitOfWork, assignment: str
) -> None:
    _, _, runs = _runs(engine, uow)
    with pytest.raises(DBAPIError) as refused, engine.begin() as conn:
        conn.execute(
            text(f"UPDATE agent_runs SET {assignment} WHERE id = :id"), {"id": runs["succeeded worker"]}
        )
    assert isinstance(refused.value.orig, psycopg.Error)


def test_a_claim_without_its_event_is_refused_by_the_database_as_the_app_role(engine: Engine) -> None:
    # Given an open run recorded by hand and a node version
    ledger = Ledger.new(engine, evidence_items=1)
    version = ledger.node("A proposition", cites=[ledger.evidence[0]])["version_id"]
    run_id = ledger.run("anthropic")
    insert = "INSERT INTO claims (id, run_id, node_version_id, claim_type) VALUES (:id, :run, :v, 'endorse')"
    hold = text("SELECT council_hold_v1(:run, 1)")  # the transaction holds the run, as its recorder's does
    # When the application role inserts a claim with no claim.added event, the commit is refused
    with pytest.raises(DBAPIError) as refused, engine.begin() as conn:
        conn.execute(hold, {"run": run_id})
        conn.execute(text(insert), {"id": uuid4(), "run": run_id, "v": version})
    assert "has no claim.added event" in str(refused.value)
    # And with its event in the same transaction (after it, as an output's events come) it lands
    claim_id = uuid4()
    payload = {"run_id": str(run_id), "node_version_id": str(version), "claim_type": "endorse",
               "confidence": 0.5, "citations": 0}  # fmt: skip
    with engine.begin() as conn:
        conn.execute(hold, {"run": run_id})
        conn.execute(text(insert), {"id": claim_id, "run": run_id, "v": version})
        conn.execute(
            text(
                "INSERT INTO events (kind, subject_id, actor, payload) "
                "VALUES ('claim.added', :s, 'test', CAST(:p AS jsonb))"
            ),
            {"s": str(claim_id), "p": json.dumps(payload)},
        )
    assert _count(engine, f"SELECT count(*) FROM claims WHERE id = '{claim_id}'") == 1


def test_nodes_and_versions_by_hand_are_refused_on_worker_failed_and_mcp_held_runs(
    engine: Engine, uow: UnitOfWork, db_url: str, cli: CliRunner
) -> None:
    """A node or version that names its run is that run's output: its citations count as
    what the run cited (council_v_opened_evidence). By hand, like a claim, only on an open
    run of its recorder; `node version --run` took any run of the thread."""
    # Given runs a person must not write for, and a node to revise
    ledger, version, runs = _runs(engine, uow)
    evidence = str(ledger.evidence[0])
    with unit_of_work(engine) as conn:
        logical = str(
            conn.execute(
                text("SELECT logical_node_id FROM node_versions WHERE id = :v"), {"v": version}
            ).scalar_one()
        )
    thread = str(ledger.thread_id)
    before = (
        _count(engine, "SELECT count(*) FROM node_versions"),
        _count(engine, "SELECT count(*) FROM events"),
    )
    app = create_app(bootstrap(db_url, scheduler=lambda uow: Recorder()), policy=Policy(write_token=TOKEN))
    with TestClient(app, base_url="http://127.0.0.1", headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        for what, run_id in runs.items():
            # When a node or a version naming the run is added by hand, on the CLI and over HTTP
            made = cli(
                "node", "add", "--thread", thread, "--content", "Forged", "--cites", evidence,
                "--run", str(run_id), "--json",
            )  # fmt: skip
            revised = cli(
                "node", "version", logical, "--content", "Forged v2", "--cites", evidence,
                "--run", str(run_id), "--json",
            )  # fmt: skip
            posted = client.post(
                f"/threads/{thread}/nodes",
                json={"content": "Forged", "cites": [evidence], "run_id": str(run_id)},
            )
            versioned = client.post(
                f"/logical-nodes/{logical}/versions",
                json={"content": "Forged v2", "cites": [evidence], "run_id": str(run_id)},
            )
            # Then each is refused with its reason, exit 2 / HTTP 422
            for done in (made, revised):
                assert done.code == 2, (what, done.stdout, done.stderr)
                assert str(run_id) in done.stderr and "\n" not in done.stderr.strip(), what
            assert (posted.status_code, versioned.status_code) == (422, 422), (
                what,
                posted.text,
                versioned.text,
            )
    # And nothing was written
    after = (
        _count(engine, "SELECT count(*) FROM node_versions"),
        _count(engine, "SELECT count(*) FROM events"),
    )
    assert after == before
    # While the recorder's own open run still writes a version
    recorded = cli("run", "record", "--thread", thread, "--agent", "me", "--model", "m", "--json")
    mine = cli("node", "version", logical, "--content", "Mine", "--run", recorded.json()["id"], "--json")
    assert mine.code == 0, mine.stderr
