"""The MCP tools answer bad input with the contract's error, never an empty answer or an
unexplained failure (issue 30 part 6): `lint` answers every text, and a lone surrogate in
any tool's arguments is refused with code 2 and nothing written. The real server, in
memory; real Postgres."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mcp.shared.memory import create_connected_server_and_client_session
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.mcp.server import build_server
from tests.builders import Ledger
from tests.integration.test_counterfactual import row_counts

TEXTS = [
    "",
    "   ",
    "\ud800 concluded",
    "It is concluded.",
    "nul \x00 here",
    "settled\u2028rejected",
    "[/x] set aside",
]


def _calls(db_url: str, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    server = build_server(bootstrap(db_url, scheduler=lambda uow: Recorder()))

    async def run() -> list[tuple[bool, str]]:
        answers = []
        async with create_connected_server_and_client_session(server) as session:
            for tool, arguments in calls:
                result = await session.call_tool(tool, arguments)
                text = "".join(getattr(part, "text", "") for part in result.content)
                answers.append((result.isError, text))
        return answers

    return asyncio.run(run())


def test_lint_answers_every_text_with_a_document(db_url: str, engine: Engine) -> None:
    thread = str(Ledger.new(engine).thread_id)
    calls = [("lint", {"text": text, "thread": where}) for text in TEXTS for where in (thread, "zz", "")]
    for (_, arguments), (is_error, text) in zip(calls, _calls(db_url, calls), strict=True):
        document = json.loads(text)  # one JSON document, never empty
        if is_error:
            assert document["code"] == 2 and document["error"].strip(), (arguments, document)
        else:
            assert "findings" in document, (arguments, document)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("add_evidence", {"text": "a lone \ud800 surrogate"}),
        ("add_evidence", {"text": "fine", "title": "\udfff"}),
        ("begin_run", {"agent": "outside\ud800", "model": "m", "provider": "p"}),
    ],
)
def test_a_lone_surrogate_in_a_tool_argument_is_code_2_and_writes_nothing(
    db_url: str, engine: Engine, tool: str, arguments: dict[str, Any]
) -> None:
    thread = str(Ledger.new(engine).thread_id)
    before = row_counts(engine)
    [(is_error, text)] = _calls(db_url, [(tool, {"thread": thread, **arguments})])
    document = json.loads(text)
    assert is_error and document["code"] == 2 and "surrogate" in document["error"], document
    assert row_counts(engine) == before


def test_a_tool_that_fails_unexpectedly_still_answers_the_contracts_document(
    db_url: str, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a lint that fails with an exception that says nothing (as a driver's may)
    from council.mcp import server

    def says_nothing(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError()

    monkeypatch.setattr(server, "lint_text", says_nothing)
    thread = str(Ledger.new(engine).thread_id)
    # When it is called, then the answer is still one document with a reason that names it
    [(is_error, text)] = _calls(db_url, [("lint", {"text": "It is concluded.", "thread": thread})])
    document = json.loads(text)
    assert is_error and document == {"error": "lint failed: unexpected RuntimeError", "code": 1}
