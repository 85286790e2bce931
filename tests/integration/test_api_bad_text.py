"""Text that is not Unicode is refused on every write route (issue 30 part 6): JSON may
spell a lone surrogate (``"\\ud800"``), which no database text can hold. Each of the nine
write routes answers 422 with the field it found it in, never a 500, and writes nothing.
Real Postgres, the real app."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate
from tests.builders import ACTOR, Ledger
from tests.integration.test_api_create import client, counts, ledger, routes  # noqa: F401 (fixtures)


def _write_routes(on: Ledger, uow: UnitOfWork) -> dict[str, tuple[str, dict[str, Any]]]:
    version = on.ready_node("Parity holds for writes")
    committed = consolidate(uow, version, actor=ACTOR)
    assert committed.consolidation_id is not None
    made = routes(on)
    claim_path, claim = made["claim"]
    made["claim"] = (claim_path, {**claim, "rationale": "as the benchmark shows"})
    return {
        **made,
        "dispatch": (f"/threads/{on.thread_id}/dispatch", {"agents": ["glm"], "mode": "review"}),
        "challenge": (f"/evidence/{on.evidence[0]}/challenge", {"reason": "the benchmark was rigged"}),
        "retraction": (
            f"/consolidations/{committed.consolidation_id}/retraction",
            {"reason": "it was wrong"},
        ),
    }


def _with_lone_surrogates(body: dict[str, Any]) -> str:
    """``body`` as JSON with a lone surrogate in every text field (and the first of a list of texts)."""
    spoiled: dict[str, Any] = {}
    for name, value in body.items():
        if isinstance(value, str) and not _is_id(value) and name not in ("type", "mode", "status", "role"):
            value = value + "\ud800"
        elif isinstance(value, list) and value and isinstance(value[0], str) and not _is_id(value[0]):
            value = [value[0] + "\udfff", *value[1:]]
        spoiled[name] = value
    return json.dumps(spoiled)  # ensure_ascii: the surrogate travels as the escape \ud800


def _is_id(text: str) -> bool:
    try:
        UUID(text)
    except ValueError:
        return False
    return True


def test_a_lone_surrogate_in_any_write_route_is_422_and_writes_nothing(
    client: TestClient,  # noqa: F811
    ledger: Ledger,  # noqa: F811
    engine: Engine,
    uow: UnitOfWork,
) -> None:
    writes = _write_routes(ledger, uow)
    assert len(writes) == 9
    before = counts(engine)
    answers = {}
    for name, (path, body) in writes.items():
        spoiled = _with_lone_surrogates(body)
        assert "\\ud800" in spoiled or "\\udfff" in spoiled, name
        response = client.post(path, content=spoiled, headers={"Content-Type": "application/json"})
        answers[name] = (response.status_code, response.text)
    assert {name: status for name, (status, _) in answers.items()} == dict.fromkeys(writes, 422), answers
    for name, (_, text) in answers.items():
        assert "surrogate" in text, (name, text)
    assert counts(engine) == before


@pytest.mark.parametrize("spelled", ['"\\ud800"', '"a\\udc00b"', '"\\udbff\\u0041"'])
def test_each_spelling_of_a_lone_surrogate_is_refused(
    client: TestClient,  # noqa: F811
    engine: Engine,
    spelled: str,
) -> None:
    before = counts(engine)
    body = '{"title": ' + spelled + ', "objective": "o"}'
    response = client.post("/threads", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert counts(engine) == before


def test_a_nul_in_any_query_or_path_parameter_is_422_never_a_500(
    client: TestClient,  # noqa: F811 (fixture)
    ledger: Ledger,  # noqa: F811 (fixture)
) -> None:
    # Given every GET operation the app publishes, its path parameters filled from a real
    # ledger (schemathesis found GET /eval?tag=%00 answering 500: Postgres holds no NUL in text)
    filled = {"thread_id": str(ledger.thread_id)}
    asked = 0
    for path, operations in client.get("/openapi.json").json()["paths"].items():
        parameters = operations.get("get", {}).get("parameters", [])
        query = [p["name"] for p in parameters if p["in"] == "query"]
        path_params = [p["name"] for p in parameters if p["in"] == "path"]
        # When each query parameter in turn, or each path parameter, holds a NUL
        for in_query, in_path in [(q, None) for q in query] + [(None, p) for p in path_params]:
            values = {name: filled.get(name, str(ledger.thread_id)) for name in path_params}
            if in_path is not None:
                values[in_path] = "a%00b"  # percent-encoded: the client sends no raw NUL
            answer = client.get(path.format(**values), params={in_query: "a\x00b"} if in_query else {})
            asked += 1
            # Then the answer is a refusal naming the parameter, never a server error
            assert answer.status_code == 422, (path, in_query, in_path, answer.status_code, answer.text)
            assert "NUL" in answer.text
    assert asked >= 10  # the app's GET operations with parameters were all asked
