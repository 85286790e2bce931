"""The HTTP API against real Postgres: reads, errors, guarded writes, the event stream.

The server here has both tokens: reads go with the read token (the client's default
header), writes with the write token. What a real uvicorn does with hosts, bodies
and tokens is tests/e2e/test_http_guard.py.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.domain.results.events import Event
from council.domain.source import from_text
from council.errors import BadInput
from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate
from council.services.dispatch import dispatch
from council.services.evidence import show_evidence
from council.services.threads import list_events
from council.web.app import create_app
from council.web.security import Policy
from tests.builders import ACTOR, Ledger
from tests.engines import uow_of
from tests.sse import read_messages

TOKEN = "s3cret-token"
READ_TOKEN = "r3ad-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
READ = {"Authorization": f"Bearer {READ_TOKEN}"}
BASE_URL = "http://127.0.0.1"  # a Host the server answers to (TestClient's default is not)


@dataclass
class Seeded:
    ledger: Ledger
    version_id: UUID
    run_id: UUID
    consolidation_id: UUID


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def client(db_url: str, recorder: Recorder) -> Iterator[TestClient]:
    policy = Policy(write_token=TOKEN, read_token=READ_TOKEN)
    app = create_app(bootstrap(db_url, scheduler=lambda uow: recorder), policy=policy, keepalive_s=0.2)
    # Runs the lifespan: the event hub listens.
    with TestClient(app, base_url=BASE_URL, headers=READ) as test_client:
        yield test_client


@pytest.fixture
def seeded(engine: Engine, uow: UnitOfWork) -> Seeded:
    ledger = Ledger.new(engine)
    version_id = ledger.ready_node("SQLite parity suffices for tests")
    committed = consolidate(uow, version_id, actor=ACTOR)
    assert committed.outcome == "committed" and committed.consolidation_id is not None
    run_id = ledger.run("zhipu", agent="glm")
    return Seeded(ledger, version_id, run_id, committed.consolidation_id)


def _events(uow: UnitOfWork, seeded: Seeded) -> list[Event]:
    return list_events(uow, seeded.ledger.thread_id).items


# -------------------------------------------------------------------- reads


def test_a_thread_reads_as_the_cli_shows_it(client: TestClient, seeded: Seeded) -> None:
    # Given a thread with a consolidated node
    thread = str(seeded.ledger.thread_id)
    # When its documents are read over HTTP
    listed = client.get("/threads").json()["items"]
    shown = client.get(f"/threads/{thread}").json()
    graph = client.get(f"/threads/{thread}/graph").json()
    runs = client.get(f"/threads/{thread}/runs").json()["items"]
    events = client.get(f"/threads/{thread}/events", params={"after": 0, "limit": 2}).json()["items"]
    packet = client.get(f"/threads/{thread}/reentry", params={"budget": 2000}).json()
    markdown = client.get(f"/threads/{thread}/reentry.md")
    answer = client.get(f"/threads/{thread}/answer").json()
    # Then they carry the ledger's facts
    assert [t["id"] for t in listed] == [thread]
    assert shown["counts"]["runs"] == 3 and shown["title"] == "SQLite parity"
    [node] = graph["nodes"]
    assert node["head_version_id"] == str(seeded.version_id)
    assert node["versions"][0]["status"] == "resolved" and node["versions"][0]["claims"] == 2
    assert [c["status"] for c in graph["consolidations"]] == ["live"]
    assert [m["status"] for m in graph["memory"]] == ["stable"]
    assert {r["agent"] for r in runs} == {"anthropic", "openai", "glm"}
    assert [e["kind"] for e in events] == ["thread.created", "evidence.added"]
    assert packet["thread_id"] == thread and packet["budget_tokens"] == 2000
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert "Is SQLite parity sufficient" in markdown.text
    # and the answer is the decision record's: the consolidated node, on its independent groups
    assert answer["established"] and answer["version_id"] == str(seeded.version_id)
    assert answer["support"] == len(answer["support_groups"]) == 2 and answer["alternatives"] == []


def test_runs_nodes_consolidations_and_memory_read_as_stored(client: TestClient, seeded: Seeded) -> None:
    # Given a consolidated node and a run
    version, consolidation = seeded.version_id, seeded.consolidation_id
    # When each is read
    run = client.get(f"/runs/{seeded.run_id}").json()
    node = client.get(f"/nodes/{version}").json()
    found = client.get(f"/nodes/{version}/groups").json()
    history = client.get(f"/nodes/{version}/history").json()
    stored = client.get(f"/consolidations/{consolidation}").json()
    replayed = client.get(f"/consolidations/{consolidation}/replay").json()
    stable = client.get("/memory", params={"status": "stable"}).json()["items"]
    contested = client.get("/memory", params={"status": "contested"}).json()["items"]
    # Then the documents agree with each other
    assert run["agent"] == "glm" and "request_sha256" in run and run["exposures"] == []
    assert node["status"] == "resolved" and len(node["claims"]) == 2
    assert found["support_groups"] == 2 and all(g["kind"] == "support" for g in found["groups"])
    assert [c["id"] for c in history["consolidations"]] == [str(consolidation)]
    assert stored["node_version_id"] == str(version) and stored["memory"]["status"] == "stable"
    assert sorted(stored["evidence_ids"]) == sorted(str(e) for e in seeded.ledger.evidence[:2])
    assert stored["decision"]["outcome"] == "consolidate"
    assert replayed["match"] is True and replayed["snapshot_sha256"] == stored["snapshot_sha256"]
    assert [m["consolidation_id"] for m in stable] == [str(consolidation)]
    assert contested == []
    assert isinstance(node["claims"][0]["confidence"], float)  # a number, as the CLI prints it


# ------------------------------------------------------------------- errors

ID_PATHS = [
    "/threads/{id}",
    "/threads/{id}/graph",
    "/threads/{id}/runs",
    "/threads/{id}/answer",
    "/threads/{id}/events",
    "/threads/{id}/reentry",
    "/threads/{id}/reentry.md",
    "/threads/{id}/stream",
    "/threads/{id}/stances",
    "/runs/{id}",
    "/nodes/{id}",
    "/nodes/{id}/groups",
    "/nodes/{id}/history",
    "/consolidations/{id}",
    "/consolidations/{id}/replay",
    "/memory?thread={id}",
]


@pytest.mark.parametrize("path", ID_PATHS)
def test_unknown_ids_are_404_and_malformed_ids_422(client: TestClient, path: str) -> None:
    # Given an id that names nothing, and one that is no UUID
    unknown, malformed = str(uuid.uuid4()), "not-a-uuid"
    # When each is asked for
    missing = client.get(path.format(id=unknown))
    broken = client.get(path.format(id=malformed))
    # Then the answers say so, with a reason
    assert missing.status_code == 404, missing.text
    assert unknown in missing.json()["detail"] or "thread" in missing.json()["detail"]
    assert broken.status_code == 422, broken.text


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/threads/{id}/dispatch", {"agents": ["claude"]}),
        ("/evidence/{id}/challenge", {"reason": "r"}),
        ("/consolidations/{id}/retraction", {"reason": "r"}),
    ],
)
def test_writes_on_unknown_ids_are_404(client: TestClient, path: str, body: dict[str, Any]) -> None:
    response = client.post(path.format(id=uuid.uuid4()), json=body, headers=AUTH)
    assert response.status_code == 404, response.text


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/memory?status=forgotten", "invalid memory status"),
        ("/threads/{thread}/reentry?budget=10", None),
        ("/threads/{thread}/events?limit=0", None),
    ],
)
def test_bad_values_are_422_with_a_reason(
    client: TestClient, seeded: Seeded, path: str, reason: str | None
) -> None:
    response = client.get(path.format(thread=seeded.ledger.thread_id))
    assert response.status_code == 422, response.text
    [detail] = response.json()["detail"]
    assert reason is None or reason in detail["msg"]


# ------------------------------------------------------------------- writes


def test_writes_are_refused_and_reads_open_when_the_server_has_no_token(
    db_url: str, uow: UnitOfWork, seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a server started without COUNCIL_API_TOKEN or COUNCIL_API_READ_TOKEN
    for variable in ("COUNCIL_API_TOKEN", "COUNCIL_API_READ_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    before = len(_events(uow, seeded))
    with TestClient(
        create_app(bootstrap(db_url, scheduler=lambda uow: Recorder())), base_url=BASE_URL
    ) as client:
        # When a write is attempted, even with some token
        response = client.post(
            f"/evidence/{seeded.ledger.evidence[0]}/challenge", json={"reason": "doubt"}, headers=AUTH
        )
        # Then it is refused, the reason names the variable, and nothing is written
        assert response.status_code == 401
        assert "COUNCIL_API_TOKEN" in response.json()["detail"]
        assert len(_events(uow, seeded)) == before
        # But reads need no token
        assert client.get(f"/threads/{seeded.ledger.thread_id}").status_code == 200


@pytest.mark.parametrize(
    "path",
    ["/threads", "/threads/{thread}/graph", "/threads/{thread}/answer", "/runs/{run}", "/memory", "/metrics"],
)
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": READ_TOKEN}])
def test_reads_without_a_token_are_refused_when_one_is_configured(
    client: TestClient, seeded: Seeded, path: str, headers: dict[str, str]
) -> None:
    # Given a server with tokens, and a request with none, a wrong one, or no scheme
    client.headers.pop("Authorization")
    # When it reads
    response = client.get(path.format(thread=seeded.ledger.thread_id, run=seeded.run_id), headers=headers)
    # Then it is refused, with a challenge and no ledger data
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == "Bearer"
    assert set(response.json()) == {"detail"}
    # But either token reads it, and /health and the page need none
    for token in (READ, AUTH):
        assert client.get(
            path.format(thread=seeded.ledger.thread_id, run=seeded.run_id), headers=token
        ).is_success
    assert client.get("/health").json() == {"ok": True}
    assert client.get("/").status_code == client.get("/static/app.js").status_code == 200


def test_the_read_token_cannot_write(client: TestClient, uow: UnitOfWork, seeded: Seeded) -> None:
    # Given the holder of the read token
    before = len(_events(uow, seeded))
    # When it tries to challenge evidence
    response = client.post(
        f"/evidence/{seeded.ledger.evidence[0]}/challenge", json={"reason": "doubt"}, headers=READ
    )
    # Then it is forbidden, and nothing is written
    assert response.status_code == 403
    assert "read token cannot write" in response.json()["detail"]
    assert show_evidence(uow, seeded.ledger.evidence[0]).validity == "valid"
    assert len(_events(uow, seeded)) == before


def test_a_host_the_server_does_not_answer_to_is_refused(client: TestClient) -> None:
    # A page of another site whose name resolves to 127.0.0.1 (DNS rebinding) sends its own name
    for host in ("attacker.example", "attacker.example:8787", "127.0.0.1.nip.io"):
        response = client.get("/threads", headers={"Host": host})
        assert response.status_code == 400, host
        assert "COUNCIL_ALLOWED_HOSTS" in response.json()["detail"]
    # While loopback names are answered on any port
    for host in ("127.0.0.1:8787", "localhost", "LOCALHOST:1", "[::1]:8787"):
        assert client.get("/threads", headers={"Host": host}).status_code == 200, host


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}])
def test_writes_without_the_right_token_are_refused(
    client: TestClient, uow: UnitOfWork, seeded: Seeded, headers: dict[str, str]
) -> None:
    # Given a server with a token, and a request with none, a wrong one, or no scheme
    client.headers.pop("Authorization")
    before = len(_events(uow, seeded))
    # When it tries to challenge evidence
    response = client.post(
        f"/evidence/{seeded.ledger.evidence[0]}/challenge", json={"reason": "doubt"}, headers=headers
    )
    # Then it is refused and nothing is written
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert show_evidence(uow, seeded.ledger.evidence[0]).validity == "valid"
    assert len(_events(uow, seeded)) == before


def test_an_authorised_challenge_lands_in_the_ledger(
    client: TestClient, uow: UnitOfWork, seeded: Seeded
) -> None:
    # Given evidence a consolidation rests on
    evidence = seeded.ledger.evidence[0]
    # When the token holder challenges it
    response = client.post(
        f"/evidence/{evidence}/challenge", json={"reason": "method questioned"}, headers=AUTH
    )
    # Then the transition, the memory move and the event are in the ledger
    assert response.status_code == 200, response.text
    assert response.json()["validity"] == "challenged"
    assert [a["memory_status"] for a in response.json()["affected"]] == ["provisional"]
    assert show_evidence(uow, evidence).validity == "challenged"
    memory = client.get(f"/consolidations/{seeded.consolidation_id}").json()["memory"]
    assert memory["status"] == "provisional"
    [event] = [e for e in _events(uow, seeded) if e.kind == "evidence.challenged"]
    assert event.actor == "api"


def test_reading_provisional_memory_queues_its_reverification(
    client: TestClient, seeded: Seeded, recorder: Recorder
) -> None:
    # Given memory made provisional by a challenge
    client.post(f"/evidence/{seeded.ledger.evidence[0]}/challenge", json={"reason": "doubt"}, headers=AUTH)
    # When memory is listed and the reentry packet read
    [item] = client.get("/memory", params={"status": "provisional"}).json()["items"]
    client.get(f"/threads/{seeded.ledger.thread_id}/reentry")
    # Then each read queued its re-verification (lazily, docs/architecture.md §5)
    assert recorder.reverifications == [[UUID(item["id"])], [UUID(item["id"])]]


def test_an_authorised_dispatch_creates_runs_and_enqueues_them(
    client: TestClient, seeded: Seeded, recorder: Recorder
) -> None:
    # Given a thread
    thread = seeded.ledger.thread_id
    # When the token holder dispatches a two-round deliberation
    response = client.post(
        f"/threads/{thread}/dispatch",
        json={"agents": ["claude", "codex"], "mode": "deliberative", "rounds": 2},
        headers=AUTH,
    )
    # Then the first round's runs exist, queued, and were handed to the scheduler
    assert response.status_code == 202, response.text
    created = response.json()
    assert created["mode"] == "deliberative" and created["rounds"] == 2
    assert [str(r) for r in recorder.runs] == created["run_ids"]
    runs = {r["id"]: r for r in client.get(f"/threads/{thread}/runs").json()["items"]}
    assert all(runs[r]["status"] == "queued" and runs[r]["round"] == 1 for r in created["run_ids"])


def test_a_dispatch_retried_with_its_idempotency_key_creates_nothing_new(
    client: TestClient, seeded: Seeded, recorder: Recorder
) -> None:
    # Given a dispatch made with an idempotency key
    thread = seeded.ledger.thread_id
    asked = {"agents": ["glm", "claude"]}
    keyed = {**AUTH, "Idempotency-Key": "retry-me-1"}
    first = client.post(f"/threads/{thread}/dispatch", json=asked, headers=keyed)
    assert first.status_code == 202, first.text
    runs_before = client.get(f"/threads/{thread}/runs").json()["items"]
    # When the client retries it with the same key
    again = client.post(f"/threads/{thread}/dispatch", json=asked, headers=keyed)
    # Then it gets the first dispatch back, and nothing new exists
    assert again.status_code == 202, again.text
    assert again.json()["dispatch_id"] == first.json()["dispatch_id"]
    assert again.json()["run_ids"] == first.json()["run_ids"]
    assert again.json()["replayed"] is True and first.json()["replayed"] is False
    assert client.get(f"/threads/{thread}/runs").json()["items"] == runs_before
    # And the same key asking for something else — other agents, or the same with a budget
    # (issue 44: the budget was not part of the key's request) — is refused, writing nothing
    for changed in ({**asked, "budget_usd": 0.5}, {"agents": ["codex"]}):
        other = client.post(f"/threads/{thread}/dispatch", json=changed, headers=keyed)
        assert other.status_code == 422, other.text
        assert "another dispatch" in other.json()["detail"][0]["msg"]
        assert "budget or simulation mode" in other.json()["detail"][0]["msg"]
    assert client.get(f"/threads/{thread}/runs").json()["items"] == runs_before


def test_a_key_retried_with_another_simulation_mode_is_refused(engine: Engine, recorder: Recorder) -> None:
    # Given a dispatch made with a key, simulated because it was told to always simulate
    ledger = Ledger.new(engine)
    uow = uow_of(engine)
    first = dispatch(uow, recorder, ledger.thread_id, ["claude"], mode="independent", rounds=1, actor=ACTOR,
                     key="sim-key-1", simulate="always")  # fmt: skip
    # When the same key asks for the same agents under another simulation mode
    with pytest.raises(BadInput, match="another dispatch"):
        dispatch(uow, recorder, ledger.thread_id, ["claude"], mode="independent", rounds=1, actor=ACTOR,
                 key="sim-key-1", simulate="auto")  # fmt: skip
    # Then it is refused, and the same request still replays the first
    again = dispatch(uow, recorder, ledger.thread_id, ["claude"], mode="independent", rounds=1, actor=ACTOR,
                     key="sim-key-1", simulate="always")  # fmt: skip
    assert again.replayed and again.dispatch_id == first.dispatch_id


def test_a_dispatch_with_no_broker_is_503_and_writes_nothing(
    db_url: str, seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a server with no scheduler to hand runs to
    app = create_app(bootstrap(db_url, scheduler=lambda uow: None), policy=Policy(write_token=TOKEN))
    with TestClient(app, base_url=BASE_URL, headers=AUTH) as client:
        before = client.get(f"/threads/{seeded.ledger.thread_id}/runs").json()["items"]
        # When a dispatch is asked for
        response = client.post(
            f"/threads/{seeded.ledger.thread_id}/dispatch", json={"agents": ["claude"]}, headers=AUTH
        )
        after = client.get(f"/threads/{seeded.ledger.thread_id}/runs").json()["items"]
    # Then it is unavailable, says why, and no run was created
    assert response.status_code == 503
    assert "broker" in response.json()["detail"]
    assert after == before


def test_an_authorised_retraction_proposal_contests_the_memory(client: TestClient, seeded: Seeded) -> None:
    # When the token holder proposes retracting a live consolidation
    response = client.post(
        f"/consolidations/{seeded.consolidation_id}/retraction",
        json={"reason": "foundation doubted"},
        headers=AUTH,
    )
    again = client.post(
        f"/consolidations/{seeded.consolidation_id}/retraction", json={"reason": "x" * 2001}, headers=AUTH
    )
    # Then the proposal is open and the memory contested; an oversize reason is refused
    assert response.status_code == 201, response.text
    assert response.json()["status"] == "open"
    assert client.get("/memory", params={"status": "contested"}).json()["items"][0]["id"]
    assert again.status_code == 422


# ------------------------------------------------------------------- stream


def test_an_event_inserted_shows_up_on_the_stream(
    client: TestClient, uow: UnitOfWork, seeded: Seeded
) -> None:
    # Given a client following the thread's stream from now
    thread = seeded.ledger.thread_id
    with client.stream("GET", f"/threads/{thread}/stream") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()
        read_messages(lines, lambda ms: {"comment": "listening"} in ms)
        # When evidence is added to the thread by another writer
        with uow() as tx:
            added = tx.evidence.add(
                thread_id=thread, source=from_text("fresh evidence"), title=None, actor=ACTOR
            )
        # Then its event arrives, with its id, and keep-alives flow while nothing happens
        got = read_messages(lines, lambda ms: any(m.get("data") for m in ms))
        [event] = [m for m in got if m.get("data")]
        assert event["data"]["kind"] == "evidence.added"
        assert event["data"]["subject_id"] == str(added.id)
        assert event["id"] == event["data"]["id"] == _events(uow, seeded)[-1].id
        quiet = read_messages(lines, lambda ms: {"comment": "keep-alive"} in ms)
        assert not any(m.get("data") for m in quiet)
        hub = client.app.state.wiring.hub  # type: ignore[attr-defined]
        assert hub.subscriber_count() == 1
    # And a client that leaves is unsubscribed
    deadline = time.monotonic() + 5
    while hub.subscriber_count() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert hub.subscriber_count() == 0


def test_a_reconnecting_client_gets_every_event_it_missed(
    client: TestClient, uow: UnitOfWork, seeded: Seeded
) -> None:
    # Given a client that last saw the thread's first event
    history = _events(uow, seeded)
    first = history[0].id
    # When it reconnects with Last-Event-ID
    with client.stream(
        "GET", f"/threads/{seeded.ledger.thread_id}/stream", headers={"Last-Event-ID": str(first)}
    ) as response:
        got = read_messages(
            response.iter_lines(), lambda ms: len([m for m in ms if m.get("data")]) == len(history) - 1
        )
    # Then it is sent everything after it, in order, from the ledger
    assert [m["id"] for m in got if m.get("data")] == [e.id for e in history[1:]]


# ------------------------------------------------------- metrics, page, spec


def test_metrics_count_requests_by_route_template(client: TestClient, seeded: Seeded) -> None:
    # Given requests naming a run and a missing page
    client.get(f"/runs/{seeded.run_id}")
    client.get("/no/such/page")
    # When the metrics are scraped
    response = client.get("/metrics")
    # Then they are labelled by template, never by id
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    body = response.text
    assert 'route="/runs/{run_id}",status="200"' in body
    assert 'route="<unmatched>",status="404"' in body
    assert str(seeded.run_id) not in body


def _series(exposition: str) -> set[str]:
    return {line.split(" ")[0] for line in exposition.splitlines() if line.startswith("council_http_")}


def test_made_up_methods_and_paths_leave_the_metrics_series_bounded(client: TestClient) -> None:
    # Given the series the metrics hold now (this process's earlier requests included, and
    # the fixed-label ones a scrape and an unmatched path add, so the test holds run alone)
    client.get("/metrics")
    client.get("/made/up/primer", headers={"Authorization": ""})
    before = _series(client.get("/metrics").text)
    # When 3,000 requests come with made-up methods and paths, none authenticated
    for i in range(1000):
        client.request(f"BREW{i}", f"/threads/{i}", headers={"Authorization": ""})
        client.request(f"X-{i}", "/health", headers={"Authorization": ""})
        client.get(f"/made/up/{i}", headers={"Authorization": ""})
    # Then at most a handful of series were added: method "other", route templates only
    after = _series(client.get("/metrics").text)
    added = after - before
    assert len(added) <= 40, sorted(added)[:10]
    assert not any("BREW" in series or "X-" in series or "/made/" in series for series in after)
    assert any('method="other"' in series for series in added)


def test_the_page_and_its_assets_are_served_from_the_package(client: TestClient) -> None:
    page = client.get("/")
    script = client.get("/static/app.js")
    assert page.status_code == 200 and '<script src="/static/app.js"' in page.text
    for asset in ("graph.js", "independence.js", "governance.js", "truth.js", "answer.js", "style.css"):
        # every asset the page names is served
        assert f"/static/{asset}" in page.text and client.get(f"/static/{asset}").status_code == 200
    # Stored text reaches the page as text: no script parses a string as markup or code, and
    # the page runs no inline script or handler (its content security policy would refuse one)
    scripts = re.findall(r'<script src="/static/([a-z]+\.js)"', page.text)
    assert len(scripts) == page.text.count("<script") == 6
    sinks = (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        "setHTML",
    )
    for name in scripts:
        source = client.get(f"/static/{name}").text
        assert not [sink for sink in sinks if sink in source], name
    assert not re.search(r"\son[a-z]+=", page.text)
    # The stream is read with fetch, so the token travels in a header, never in a URL
    assert (
        script.status_code == 200
        and "text/event-stream" in script.text
        and "new EventSource" not in script.text
    )
    assert "http" not in page.text.replace("http://www.w3.org/2000/svg", "")  # no CDN


def test_the_openapi_document_declares_errors_and_guards_writes(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    dispatch = spec["paths"]["/threads/{thread_id}/dispatch"]["post"]
    assert dispatch["security"] == [{"token": []}]
    assert {"401", "404", "422", "503"} <= set(dispatch["responses"])
    assert "404" in spec["paths"]["/runs/{run_id}"]["get"]["responses"]
    # Every route but /health needs the token (the page and its files are not API operations)
    guarded = {path for path, ops in spec["paths"].items() for op in ops.values() if op.get("security")}
    assert set(spec["paths"]) - guarded == {"/health"}
    assert spec["components"]["securitySchemes"]["token"] == {
        "type": "http",
        "scheme": "bearer",
        "description": spec["components"]["securitySchemes"]["token"]["description"],
    }
    assert {"400", "401"} <= set(spec["paths"]["/threads"]["get"]["responses"])
    assert {"403", "413"} <= set(dispatch["responses"])


def test_a_vote_adjudication_and_resolution_go_through_the_same_services_as_the_cli(
    client: TestClient, uow: UnitOfWork, seeded: Seeded
) -> None:
    # Given an open proposal and two runs recorded by the API's actor, one per provider
    proposal = client.post(
        f"/consolidations/{seeded.consolidation_id}/retraction", json={"reason": "doubt"}, headers=AUTH
    ).json()["id"]
    voters = [
        client.post(
            f"/threads/{seeded.ledger.thread_id}/runs",
            json={"agent": agent, "model": f"{provider}/m", "provider": provider},
            headers=AUTH,
        ).json()["id"]
        for agent, provider in (("claude", "anthropic"), ("codex", "openai"))
    ]
    # When both vote to retract, and the read token tries to vote too
    votes = [
        client.post(f"/proposals/{proposal}/votes", json={"run_id": run, "vote": "endorse"}, headers=AUTH)
        for run in voters
    ]
    refused = client.post(f"/proposals/{proposal}/votes", json={"run_id": voters[0], "vote": "endorse"})
    bad = client.post(
        f"/proposals/{proposal}/votes", json={"run_id": voters[0], "vote": "maybe"}, headers=AUTH
    )
    decided = client.post(f"/proposals/{proposal}/adjudicate", json={}, headers=AUTH)
    # Then the votes land, the proposal is decided by its rules, and the listing says so
    assert [v.status_code for v in votes] == [201, 201], votes[0].text
    assert refused.status_code == 403 and bad.status_code == 422
    assert decided.status_code == 200, decided.text
    assert decided.json()["outcome"] == "retracted"
    [listed] = client.get("/proposals", params={"thread": str(seeded.ledger.thread_id)}).json()["items"]
    assert (listed["status"], listed["votes"]) == ("retracted", 2)
    # And an outside fact resolves a node version, appended with its event
    resolved = client.post(
        f"/nodes/{seeded.version_id}/resolutions",
        json={"outcome": False, "source": "a later paper", "reason": "replication failed"},
        headers=AUTH,
    )
    assert resolved.status_code == 201, resolved.text
    assert resolved.json()["outcome"] is False
    assert [e.kind for e in _events(uow, seeded) if e.kind == "node.resolved"] == ["node.resolved"]
    empty = client.post(f"/nodes/{seeded.version_id}/resolutions", json={"outcome": True}, headers=AUTH)
    assert empty.status_code == 422
