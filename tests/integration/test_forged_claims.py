"""The database refuses what the application refuses (docs/operations/security.md, issue 44 N1).

As ``council_app`` — the role every CLI user, worker and web process connects as — one
transaction once inserted a 0.99 endorsement on a *succeeded* worker run with a
``claim.added`` event whose payload was ``{}``; it committed, ``council groups`` built a
support group on it, and ``GET /threads/T/formation`` answered 500 for good. Now a claim is
accepted only for a run that is live and held by the inserting transaction (migration
0041: ``council_claims_need_a_held_run_v1``), every event's payload is checked against its
kind's shape (``council_event_shape_v1``), and the readers of the event log skip an event
written before those checks (planted here as the owner, with the check switched off) and
say so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.domain.event_shapes import SHAPES
from council.services.execution import execute_run
from council.web.app import create_app
from council.web.security import Policy
from tests.builders import Ledger
from tests.conftest import APP_ROLE, CliRunner
from tests.engines import uow_of
from tests.rows import row

READ_TOKEN = "r3ad-token-forged-claims"


@pytest.fixture
def app_conn(db_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(db_url) as conn:
        yield conn


def _succeeded_worker_run(engine: Engine, ledger: Ledger) -> UUID:
    run_id = ledger.dispatched("claude")
    execute_run(uow_of(engine), Recorder(), run_id)
    found = row(engine, "agent_runs", "id = :id", id=run_id)
    assert (found["status"], found["mode"]) == ("succeeded", "independent")
    return run_id


def _counts(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    found = conn.execute("SELECT (SELECT count(*) FROM claims), (SELECT count(*) FROM events)").fetchone()
    assert found is not None
    return int(found[0]), int(found[1])


def test_the_app_role_cannot_forge_an_endorsement_on_a_finished_run(
    engine: Engine, app_conn: psycopg.Connection[Any]
) -> None:
    # Given a succeeded worker run and a node version of its thread it never claimed on
    ledger = Ledger.new(engine)
    run_id = _succeeded_worker_run(engine, ledger)
    version_id = ledger.node("WAL mode is safe for concurrent readers")["version_id"]
    assert app_conn.execute("SELECT current_user").fetchone() == (APP_ROLE,)
    app_conn.commit()
    before = _counts(app_conn)
    app_conn.commit()
    # When the application's role inserts, in one transaction, a 0.99 endorsement on it
    # and a claim.added event with an empty payload (the forgery of issue 44)
    claim_id = uuid4()
    with pytest.raises(psycopg.Error) as refused, app_conn.transaction():
        app_conn.execute(
            "INSERT INTO claims (id, run_id, node_version_id, claim_type, confidence, rationale) "
            "VALUES (%s, %s, %s, 'endorse', 0.99, 'forged')",
            (claim_id, run_id, version_id),
        )
        app_conn.execute(
            "INSERT INTO events (thread_id, kind, subject_id, actor, payload) "
            "VALUES (%s, 'claim.added', %s, 'forger', '{}')",
            (ledger.thread_id, str(claim_id)),
        )
    # Then the claim is refused, naming the run's state
    assert "succeeded" in str(refused.value) and "held" in str(refused.value), refused.value
    # And nothing was written
    assert _counts(app_conn) == before
    app_conn.rollback()


def test_a_claim_needs_its_run_held_by_the_inserting_transaction(
    engine: Engine, app_conn: psycopg.Connection[Any]
) -> None:
    # Given a run recorded by hand, still open, and a node version
    ledger = Ledger.new(engine)
    version_id = ledger.node("WAL mode is safe for concurrent readers")["version_id"]
    run_id = ledger.open_run("openai")
    # When a transaction inserts a claim for it without holding it (no fence named it)
    with pytest.raises(psycopg.Error) as refused, app_conn.transaction():
        app_conn.execute(
            "INSERT INTO claims (run_id, node_version_id, claim_type, confidence) "
            "VALUES (%s, %s, 'endorse', 0.9)",
            (run_id, version_id),
        )
    assert "held" in str(refused.value)
    # Then the application's own path, which holds it, is what adds a claim
    added = ledger.claim(run_id, version_id, confidence=0.9)
    assert added["claim_type"] == "endorse"


@pytest.mark.parametrize(
    ("kind", "payload", "why"),
    [
        ("claim.added", {}, "'run_id' is missing"),
        (
            "claim.added",
            {"run_id": "x", "node_version_id": 7, "claim_type": "endorse", "confidence": 0.5, "citations": 0},
            "node_version_id",
        ),
        ("no.such_kind", {}, "no.such_kind"),
        ("thread.created", [], "object"),
    ],
)
def test_an_event_whose_payload_does_not_fit_its_kind_is_refused(
    engine: Engine, app_conn: psycopg.Connection[Any], kind: str, payload: object, why: str
) -> None:
    ledger = Ledger.new(engine)
    with pytest.raises(psycopg.Error) as refused, app_conn.transaction():
        app_conn.execute(
            "INSERT INTO events (thread_id, kind, subject_id, actor, payload) VALUES (%s, %s, %s, 'x', %s)",
            (ledger.thread_id, kind, str(uuid4()), json.dumps(payload)),
        )
    assert why in str(refused.value), refused.value


def test_the_database_knows_the_shapes_the_application_writes(app_conn: psycopg.Connection[Any]) -> None:
    # The one table of event shapes (council/domain/event_shapes.py) is the migration's
    stored = app_conn.execute("SELECT kind, required FROM event_shapes ORDER BY kind").fetchall()
    assert {kind: dict(required) for kind, required in stored} == {
        kind: dict(shape) for kind, shape in SHAPES.items()
    }


def _plant_malformed_claim_event(owner_db_url: str, thread_id: UUID) -> int:
    """An event written before the checks existed: planted by the owner with them off."""
    with psycopg.connect(owner_db_url) as owner:
        owner.execute("ALTER TABLE events DISABLE TRIGGER events_fit_their_kind")
        found = owner.execute(
            "INSERT INTO events (thread_id, kind, subject_id, actor, payload) "
            "VALUES (%s, 'claim.added', %s, 'forger', '{}') RETURNING id",
            (thread_id, str(uuid4())),
        ).fetchone()
        owner.execute("ALTER TABLE events ENABLE TRIGGER events_fit_their_kind")
    assert found is not None
    return int(found[0])


def test_every_reader_of_the_log_skips_a_malformed_event_and_says_so(
    engine: Engine, db_url: str, owner_db_url: str, cli: CliRunner
) -> None:
    # Given a thread with a real claim, then a malformed claim.added event from before the checks
    ledger = Ledger.new(engine)
    version_id = ledger.node("WAL mode is safe for concurrent readers")["version_id"]
    ledger.claim(ledger.run("openai"), version_id, confidence=0.8)
    bad = _plant_malformed_claim_event(owner_db_url, ledger.thread_id)
    thread = str(ledger.thread_id)
    # When the API's formation, the page and the events are read
    policy = Policy(write_token=None, read_token=READ_TOKEN)
    app = create_app(bootstrap(db_url, scheduler=lambda uow: Recorder()), policy=policy, keepalive_s=0.2)
    with TestClient(
        app, base_url="http://127.0.0.1", headers={"Authorization": f"Bearer {READ_TOKEN}"}
    ) as client:
        formation = client.get(f"/threads/{thread}/formation")
        page = client.get(f"/threads/{thread}")
        events = client.get(f"/threads/{thread}/events")
    # Then each answers, the formation with the real claim's step and the bad event named as skipped
    assert formation.status_code == 200, formation.text
    document = formation.json()
    assert [s["node_version_id"] for s in document["steps"]] == [str(version_id)]
    assert [(s["event_id"], s["kind"]) for s in document["skipped"]] == [(bad, "claim.added")]
    assert document["skipped"][0]["reason"] == "its payload has no 'run_id'"
    assert page.status_code == 200 and events.status_code == 200
    # And `council watch` follows the log past it, saying it skipped it
    watched = cli("watch", "--thread", thread, "--since", "0", "--timeout", "1", "--json")
    assert watched.code == 0, watched.stderr
    assert [s["node_version_id"] for s in watched.json()["steps"]] == [str(version_id)]
    assert [s["event_id"] for s in watched.json()["skipped"]] == [bad]
    human = cli("watch", "--thread", thread, "--since", "0", "--timeout", "1")
    assert human.code == 0, human.stderr
    assert f"#{bad} skipped: a malformed claim.added event" in human.stdout
    # And the export still answers
    exported = cli("export", "--thread", thread, "--json")
    assert exported.code == 0, exported.stderr
    assert exported.json()["thread_id"] == thread
