"""`POST /ask` and `GET /dispatches/{id}/outcome` (the same service as `council ask`), and
`POST /threads/{id}/budget`, against real Postgres with a recording scheduler."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.web.app import create_app
from council.web.security import Policy
from tests.engines import engine_for

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BASE_URL = "http://127.0.0.1"


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def client(db_url: str, recorder: Recorder) -> Iterator[TestClient]:
    app = create_app(bootstrap(db_url, scheduler=lambda uow: recorder), policy=Policy(write_token=TOKEN))
    with TestClient(app, base_url=BASE_URL, headers=AUTH) as test_client:
        yield test_client


def test_ask_over_http_creates_the_thread_and_dispatch_and_the_outcome_can_be_polled(
    client: TestClient, recorder: Recorder
) -> None:
    # When a question is asked over HTTP
    response = client.post(
        "/ask", json={"question": "Is the cache safe?", "agents": ["claude", "glm"], "rounds": 1}
    )
    # Then a new thread and a council dispatch exist (propose, cross-review, one deliberative
    # round), its first round's runs enqueued
    assert response.status_code == 202, response.text
    accepted = response.json()
    assert accepted["created_thread"] is True
    dispatch = accepted["dispatch"]
    assert dispatch["mode"] == "council" and dispatch["rounds"] == 3
    assert [str(r) for r in recorder.runs] == dispatch["run_ids"]
    assert accepted["outcome"] == f"/dispatches/{dispatch['dispatch_id']}/outcome"
    # And polling the outcome gives the ask document, not final while the runs wait
    polled = client.get(accepted["outcome"])
    assert polled.status_code == 200, polled.text
    outcome = polled.json()
    assert outcome["thread_id"] == accepted["thread_id"] and outcome["question"] == "Is the cache safe?"
    assert outcome["complete"] is False and outcome["settled"] is False
    assert outcome["budget"]["usd"] is None and outcome["failed"] == 0


def test_a_thread_budget_set_over_http_shows_in_the_thread(client: TestClient) -> None:
    # Given a thread
    thread = client.post("/threads", json={"title": "T", "objective": "O"}).json()["id"]
    # When its budget is set, then removed
    set_to = client.post(f"/threads/{thread}/budget", json={"usd": 1.5, "reason": "cap"})
    assert set_to.status_code == 200, set_to.text
    assert set_to.json()["state"] == {"usd": 1.5, "spent_usd": 0.0, "reserved_usd": 0.0, "remaining_usd": 1.5}
    assert client.get(f"/threads/{thread}").json()["budget"]["usd"] == 1.5
    cleared = client.post(f"/threads/{thread}/budget", json={"usd": None})
    # Then the thread has none, and both changes are its history
    assert cleared.json()["state"]["usd"] is None
    assert [h["usd"] for h in cleared.json()["history"]] == [1.5, None]
    # And a negative budget is refused
    assert client.post(f"/threads/{thread}/budget", json={"usd": -1}).status_code == 422


def test_controls_over_http_on_ask_and_dispatch_and_refused_without_deliberation(
    client: TestClient, db_url: str
) -> None:
    # When a question is asked with controls, it is a dispatch with controls
    asked = client.post(
        "/ask", json={"question": "Is the cache safe?", "agents": ["claude"], "controls": True}
    )
    assert asked.status_code == 202, asked.text
    assert asked.json()["dispatch"]["controls"] is True
    thread = asked.json()["thread_id"]
    # And a deliberative dispatch may ask for them too
    made = client.post(
        f"/threads/{thread}/dispatch",
        json={"agents": ["claude"], "mode": "deliberative", "rounds": 2, "controls": True},
    )
    assert made.status_code == 202, made.text
    assert made.json()["controls"] is True
    # But an independent one is refused with the reason, and nothing is written
    with engine_for(db_url).connect() as conn:
        before = conn.execute(text("SELECT count(*) FROM dispatches")).scalar_one()
    refused = client.post(f"/threads/{thread}/dispatch", json={"agents": ["claude"], "controls": True})
    assert refused.status_code == 422 and "--controls needs --mode deliberative" in refused.text
    with engine_for(db_url).connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM dispatches")).scalar_one() == before == 2
    # And the dispatch list says which dispatches pair their runs with controls
    listed = client.get(f"/threads/{thread}/dispatches").json()["items"]
    assert [d["controls"] for d in listed] == [True, True]
