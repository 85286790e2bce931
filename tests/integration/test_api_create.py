"""The HTTP API's create routes against real Postgres: threads, evidence, nodes and
versions, recorded runs (with exposures) and claims, through the CLI's services.

Each route: success (201, and the ledger holds it), 401 without the write token,
404 for an unknown id, 422 for a bad value — the refusals with nothing written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text

from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.web.app import create_app
from council.web.security import Policy
from tests.builders import Ledger

TOKEN = "create-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TABLES = ("threads", "evidence", "thread_evidence", "node_versions", "agent_runs", "run_exposures", "claims")
TABLES += ("citations", "edges", "events")


@pytest.fixture
def client(db_url: str) -> Iterator[TestClient]:
    app = create_app(bootstrap(db_url, scheduler=lambda uow: Recorder()), policy=Policy(write_token=TOKEN))
    with TestClient(app, base_url="http://127.0.0.1", headers=AUTH) as test_client:
        yield test_client


@pytest.fixture
def ledger(engine: Engine) -> Ledger:
    return Ledger.new(engine)


def counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in TABLES}


def routes(ledger: Ledger) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each create route with a valid request on the ledger."""
    node = ledger.node("Parity holds")
    version = {"version_id": str(node["version_id"]), "logical_node_id": str(node["logical_node_id"])}
    run_id = ledger.open_run("openai", actor="api")  # recorded by the API's actor: it takes its claims
    thread = ledger.thread_id
    return {
        "thread": ("/threads", {"title": "Another", "objective": "Does it hold?"}),
        "evidence": (f"/threads/{thread}/evidence", {"text": "a benchmark shows parity", "title": "bench"}),
        "node": (
            f"/threads/{thread}/nodes",
            {
                "content": "Locking differs",
                "cites": [str(ledger.evidence[0])],
                "depends_on": [version["version_id"]],
            },
        ),
        "version": (
            f"/logical-nodes/{version['logical_node_id']}/versions",
            {
                "content": "Parity holds, for reads",
                "edges": [{"kind": "refines", "to": version["version_id"]}],
            },
        ),
        "run": (
            f"/threads/{thread}/runs",
            {
                "agent": "glm",
                "model": "zai/glm-5.1",
                "exposed_to": [str(run_id)],
                "parent_run_id": str(run_id),
            },
        ),
        "claim": (
            f"/runs/{run_id}/claims",
            {
                "node_version_id": version["version_id"],
                "type": "endorse",
                "confidence": 0.7,
                "cites": [str(ledger.evidence[1])],
            },
        ),
    }


def test_each_create_route_writes_what_the_cli_would(
    client: TestClient, ledger: Ledger, engine: Engine
) -> None:
    made = {name: client.post(path, json=body) for name, (path, body) in routes(ledger).items()}
    assert {name: r.status_code for name, r in made.items()} == dict.fromkeys(made, 201), {
        n: r.text for n, r in made.items() if r.status_code != 201
    }
    thread = made["thread"].json()
    assert client.get(f"/threads/{thread['id']}").json()["title"] == "Another"
    evidence = client.get(f"/evidence/{made['evidence'].json()['id']}").json()
    assert evidence["content"] == "a benchmark shows parity"
    node = client.get(f"/nodes/{made['node'].json()['version_id']}").json()
    assert [c["evidence_id"] for c in node["citations"]] == [str(ledger.evidence[0])]
    assert [e["kind"] for e in node["edges_out"]] == ["depends_on"]
    assert client.get(f"/nodes/{made['version'].json()['version_id']}").json()["version_no"] == 2
    run = client.get(f"/runs/{made['run'].json()['id']}").json()
    assert [(e["kind"], e["channel"]) for e in run["exposures"]] == [("stance", "explicit")]
    assert run["parent_run_id"] == made["run"].json()["parent_run_id"]
    claim = made["claim"].json()
    assert claim["claim_type"] == "endorse" and len(claim["citation_ids"]) == 1


@pytest.mark.parametrize("route", ["thread", "evidence", "node", "version", "run", "claim"])
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}], ids=["no-token", "wrong-token"])
def test_creating_without_the_write_token_is_401_and_writes_nothing(
    client: TestClient, ledger: Ledger, engine: Engine, route: str, headers: dict[str, str]
) -> None:
    path, body = routes(ledger)[route]
    before = counts(engine)
    response = client.post(path, json=body, headers={"Authorization": "", **headers})
    assert response.status_code == 401, response.text
    assert counts(engine) == before


UNKNOWN = "4a1f0c2e-9b7d-4e61-8d3a-5c2b9e0f7a16"  # no row has it: every test database starts empty


@pytest.mark.parametrize(
    ("route", "path", "body"),
    [
        ("evidence", f"/threads/{UNKNOWN}/evidence", None),
        ("node", f"/threads/{UNKNOWN}/nodes", None),
        ("node", None, {"depends_on": [UNKNOWN]}),
        ("version", f"/logical-nodes/{UNKNOWN}/versions", None),
        ("run", f"/threads/{UNKNOWN}/runs", None),
        ("run", None, {"exposed_to": [UNKNOWN]}),
        ("claim", f"/runs/{UNKNOWN}/claims", None),
        ("claim", None, {"node_version_id": UNKNOWN}),
        ("claim", None, {"cites": [UNKNOWN]}),
    ],
)
def test_an_unknown_id_is_404_and_writes_nothing(
    client: TestClient,
    ledger: Ledger,
    engine: Engine,
    route: str,
    path: str | None,
    body: dict[str, Any] | None,
) -> None:
    valid_path, valid_body = routes(ledger)[route]
    before = counts(engine)
    response = client.post(path or valid_path, json={**valid_body, **(body or {})})
    assert response.status_code == 404, response.text
    assert UNKNOWN in response.json()["detail"]
    assert counts(engine) == before


@pytest.mark.parametrize(
    ("route", "body", "reason"),
    [
        ("thread", {"title": " "}, "title"),
        ("thread", {"colour": "red"}, "extra"),
        ("evidence", {"text": None}, "exactly one"),
        ("evidence", {"url": "https://example.org/x"}, "exactly one"),
        ("node", {"status": "resolved"}, "status"),
        ("node", {"edges": [{"kind": "likes", "to": UNKNOWN}]}, "edge"),
        ("version", {"content": "x" * 100_001}, "too long"),
        ("run", {"agent": ""}, "agent"),
        ("claim", {"type": "agree"}, "claim type"),
        ("claim", {"confidence": 2}, "confidence"),
        ("claim", {"node_version_id": "not-an-id"}, "uuid"),
    ],
)
def test_a_bad_value_is_422_with_a_reason_and_writes_nothing(
    client: TestClient, ledger: Ledger, engine: Engine, route: str, body: dict[str, Any], reason: str
) -> None:
    path, valid_body = routes(ledger)[route]
    before = counts(engine)
    response = client.post(path, json={**valid_body, **body})
    assert response.status_code == 422, response.text
    assert reason in response.text.lower()
    assert counts(engine) == before


def test_the_openapi_document_lists_every_create_route_guarded(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for path in (
        "/threads",
        "/threads/{thread_id}/evidence",
        "/threads/{thread_id}/nodes",
        "/logical-nodes/{logical_node_id}/versions",
        "/threads/{thread_id}/runs",
        "/runs/{run_id}/claims",
    ):
        post = spec["paths"][path]["post"]
        assert {"201", "401", "404", "422"} <= set(post["responses"]), path
        assert post["tags"] == ["writes"]


def test_ids_in_created_documents_are_uuids(client: TestClient, ledger: Ledger) -> None:
    path, body = routes(ledger)["thread"]
    assert UUID(client.post(path, json=body).json()["id"])
