"""Every answer kept (issue 29 part 2, docs/architecture.md §7): the text each round of a run returned is
stored once by its SHA-256, immutable, bounded with truncation recorded, and shown by
`run show` (human and --json `answer`), the API and MCP. Real Postgres; the API run talks
real HTTP to the fake OpenAI server; the simulated provider runs in process."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import anyio
import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.ledger.answers import MAX_ANSWER_BYTES
from council.ledger.unit import UnitOfWork
from council.mcp.server import build_server
from council.services.execution import execute_run
from council.services.run_answers import keep_answer
from council.services.runs import show_run
from council.web.app import create_app
from council.web.security import Policy
from tests.builders import Ledger
from tests.conftest import CliRunner
from tests.engines import unit_of_work
from tests.fakes.openai_server import reply
from tests.integration.test_run_outcomes import (  # noqa: F401  (the autouse profile fixture)
    NOT_JSON,
    _dispatch,
    _fake_agent,
    _offline_profile_env,
    _thread,
    _valid_output,
)
from tests.rows import count


def _texts(engine: Engine) -> int:
    with unit_of_work(engine) as conn:
        return count(conn, "answer_texts")


def test_an_api_run_keeps_each_round_and_run_show_gives_the_answer(
    engine: Engine, uow: UnitOfWork, cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a provider that first answers prose, then valid JSON
    ledger, heads = _thread(engine)
    answer = _valid_output(ledger, heads).model_dump_json()
    with _fake_agent(monkeypatch, tmp_path, [reply(NOT_JSON), reply(answer)]):
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        assert execute_run(uow, Recorder(), run_id).status == "succeeded"
    # Then both rounds are kept, the answer is the last, by its SHA-256
    shown = show_run(uow, run_id)
    assert [(a.attempt, a.round, a.text) for a in shown.answers] == [(1, 0, NOT_JSON), (1, 1, answer)]
    assert shown.answer is not None and shown.answer.text == answer
    assert shown.answer.sha256 == hashlib.sha256(answer.encode()).hexdigest()
    assert (shown.answer.byte_length, shown.answer.truncated) == (len(answer.encode()), False)
    # And `council run show --json` has the key `answer`; the human view prints the text
    doc = cli("run", "show", str(run_id), "--json")
    assert doc.code == 0, doc.stderr
    assert doc.json()["answer"]["text"] == answer
    assert doc.json()["answer"]["sha256"] == shown.answer.sha256
    human = cli("run", "show", str(run_id), env={"NO_COLOR": "1", "COLUMNS": "400"})
    assert human.code == 0, human.stderr
    assert "answer (attempt 1 round 1" in human.stdout and '"summary":"[fake] one endorsement' in human.stdout


def test_a_failed_run_keeps_its_answers_and_equal_texts_are_stored_once(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ledger, _ = _thread(engine)
    with _fake_agent(monkeypatch, tmp_path, [reply(NOT_JSON), reply(NOT_JSON)]):
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        assert execute_run(uow, Recorder(), run_id).status == "failed"
    shown = show_run(uow, run_id)
    assert [a.round for a in shown.answers] == [0, 1]
    assert shown.answers[0].sha256 == shown.answers[1].sha256
    assert _texts(engine) == 1  # two rounds, one text


def test_a_simulated_run_keeps_its_answer(engine: Engine, uow: UnitOfWork, cli: CliRunner) -> None:
    ledger = Ledger.new(engine, evidence_items=1)
    ledger.node("A proposition", cites=[ledger.evidence[0]])
    run_id = ledger.dispatched("claude")
    assert execute_run(uow, Recorder(), run_id).status == "succeeded"
    doc = cli("run", "show", str(run_id), "--json")
    assert doc.code == 0, doc.stderr
    kept = doc.json()["answer"]
    assert kept["text"] and kept["sha256"] == hashlib.sha256(kept["text"].encode()).hexdigest()
    assert json.loads(kept["text"])["summary"]


def test_a_long_answer_is_cut_with_its_length_and_the_rows_are_immutable_as_the_app(
    engine: Engine, uow: UnitOfWork, db_url: str
) -> None:
    ledger = Ledger.new(engine, evidence_items=1)
    ledger.node("A proposition", cites=[ledger.evidence[0]])
    run_id = ledger.dispatched("claude")
    long = "é" * (MAX_ANSWER_BYTES // 2 + 10)  # two bytes each: over the bound
    sha = keep_answer(uow, run_id, 1, 0, long)
    assert keep_answer(uow, run_id, 1, 0, long) == sha  # the same round again: a no-op
    (kept,) = show_run(uow, run_id).answers
    assert kept.truncated and kept.byte_length == len(long.encode())
    assert len(kept.text.encode()) <= MAX_ANSWER_BYTES and long.startswith(kept.text)
    assert kept.sha256 == hashlib.sha256(long.encode()).hexdigest()
    for statement in (
        "UPDATE answer_texts SET body = 'forged'",
        "DELETE FROM answer_texts",
        "UPDATE run_answers SET round = 7",
        "DELETE FROM run_answers",
        "TRUNCATE run_answers",
    ):
        with pytest.raises(DBAPIError) as refused, engine.begin() as conn:  # as council_app
            conn.execute(text(statement))
        assert isinstance(refused.value.orig, psycopg.Error)
    assert show_run(uow, run_id).answers == [kept]


def test_the_api_mcp_and_run_show_give_the_answer_as_data(
    engine: Engine, uow: UnitOfWork, db_url: str, cli: CliRunner
) -> None:
    ledger = Ledger.new(engine, evidence_items=1)
    ledger.node("A proposition", cites=[ledger.evidence[0]])
    run_id = ledger.dispatched("claude")
    kept = "<b>not markup</b> [bold]nor this[/bold]"
    keep_answer(uow, run_id, 1, 0, kept)
    council = bootstrap(db_url, scheduler=lambda uow: Recorder())
    app = create_app(council, policy=Policy(write_token="w-token", read_token="r-token"), keepalive_s=0.2)
    with TestClient(app, base_url="http://127.0.0.1", headers={"Authorization": "Bearer r-token"}) as client:
        got = client.get(f"/runs/{run_id}")
    assert got.status_code == 200, got.text
    assert got.json()["answer"]["text"] == kept
    server = build_server(council)
    (content,) = anyio.run(server.read_resource, f"council://runs/{run_id}")
    assert json.loads(content.content)["answer"]["text"] == kept
    # And the human `run show` prints the markup as text (Rich does not interpret it)
    human = cli("run", "show", str(run_id), env={"NO_COLOR": "1", "COLUMNS": "400"})
    assert human.code == 0, human.stderr
    assert kept in human.stdout
