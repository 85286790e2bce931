"""An API run reads what it cites (issue 29 part 1, docs/architecture.md §7): the briefing gives it the
evidence text inline, up to a stated budget; what it was given is recorded as its opened
evidence; a citation of evidence it was not given is refused: one re-prompt naming it, then
a failed run with that reason. Real Postgres and real HTTP to the fake OpenAI server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine, text

from council.adapters.scheduler import Recorder
from council.domain.agent_output import AgentOutput, CitationOut, ClaimOut
from council.ledger.unit import UnitOfWork
from council.services.dispatch import preview
from council.services.execution import execute_run
from council.services.runs import show_run
from tests.builders import Ledger
from tests.fakes.chat_model import messages_model
from tests.fakes.openai_server import read_evidence, reply
from tests.integration.test_run_outcomes import (  # noqa: F401  (the autouse profile fixture)
    _claims,
    _dispatch,
    _fake_agent,
    _offline_profile_env,
    _run,
)


def _thread(engine: Engine) -> tuple[Ledger, UUID, list[str]]:
    """Five evidence items (about 30 characters each), all cited by the thread's one node."""
    ledger = Ledger.new(engine, evidence_items=5)
    version = UUID(
        str(ledger.node("The adapter needs a Postgres tier", cites=list(ledger.evidence))["version_id"])
    )
    return ledger, version, [str(e) for e in ledger.evidence]


def _citing(version: UUID, evidence: str) -> str:
    return AgentOutput(
        summary="[fake] one endorsement",
        claims=[
            ClaimOut(
                node_version_id=str(version),
                type="endorse",
                confidence=0.7,
                rationale="As the cited text says.",
                cites=[CitationOut(evidence_id=evidence, interpretation="as written")],
            )
        ],
    ).model_dump_json()


def _briefing(request: dict[str, Any]) -> dict[str, Any]:
    user = request["messages"][-1]["content"]
    return dict(json.loads(user.split("```json\n", 1)[1].split("\n```", 1)[0]))


def test_an_api_run_is_given_the_evidence_text_and_its_reads_are_recorded(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a thread with five evidence items, and a model that cites one it was given
    ledger, version, evidence = _thread(engine)
    with _fake_agent(monkeypatch, tmp_path, [reply(_citing(version, evidence[0]))]) as seen:
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        shown = preview(uow, ledger.thread_id, "fake")
        result = execute_run(uow, Recorder(), run_id)
    # Then the request it sent held each item's text, and the preview is that request
    assert result.status == "succeeded", _run(engine, run_id)["error"]
    run = _run(engine, run_id)
    assert run["request"] == shown.request and run["request_sha256"] == shown.request_sha256
    sent = seen.requests[0]["json"]["messages"]
    given = _briefing({"messages": sent})["evidence_texts"]
    assert sorted(item["id"] for item in given) == sorted(evidence)
    assert all(item["text"] for item in given)
    # And run show names them as what the run opened, beside what it cited
    opened = {str(o.evidence_id): o for o in show_run(uow, run_id).opened_evidence or []}
    assert set(opened) == set(evidence) and all(o.opened for o in opened.values())
    assert [e for e, o in opened.items() if o.cited] == [evidence[0]]


def test_a_citation_of_evidence_not_given_is_reprompted_then_fails_with_the_reason(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a budget that gives the run only some of the five items
    ledger, version, evidence = _thread(engine)
    monkeypatch.setenv("COUNCIL_INLINE_EVIDENCE_TOKENS", "15")
    with _fake_agent(monkeypatch, tmp_path, [reply("{}")]):  # its profile, for the preview
        briefing = _briefing(preview(uow, ledger.thread_id, "fake").request)
    given = [item["id"] for item in briefing["evidence_texts"]]
    not_given = briefing["evidence_not_given"]
    assert given and not_given and set(given) | set(not_given) == set(evidence)
    unread = not_given[0]
    with _fake_agent(
        monkeypatch, tmp_path, [reply(_citing(version, unread)), reply(_citing(version, unread))]
    ) as seen:
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        result = execute_run(uow, Recorder(), run_id)
    # Then it was re-prompted once with the reason naming the item, then failed with it
    assert result.status == "failed"
    run = _run(engine, run_id)
    assert unread in run["error"] and "not given to read" in run["error"]
    assert len(seen.requests) == 2 and unread in seen.requests[1]["json"]["messages"][-1]["content"]
    # And no claim of it stands
    assert _claims(engine, run_id) == []


def test_a_run_that_cites_what_it_was_given_after_a_reprompt_succeeds(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ledger, version, _ = _thread(engine)
    monkeypatch.setenv("COUNCIL_INLINE_EVIDENCE_TOKENS", "15")
    with _fake_agent(monkeypatch, tmp_path, [reply("{}")]):  # its profile, for the preview
        briefing = _briefing(preview(uow, ledger.thread_id, "fake").request)
    given, unread = briefing["evidence_texts"][0]["id"], briefing["evidence_not_given"][0]
    script = [reply(_citing(version, unread)), reply(_citing(version, given))]
    with _fake_agent(monkeypatch, tmp_path, script):
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        result = execute_run(uow, Recorder(), run_id)
    assert result.status == "succeeded", _run(engine, run_id)["error"]
    assert len(_claims(engine, run_id)) == 1


def test_a_run_reads_evidence_left_out_through_the_tool_and_may_cite_it(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a budget that gives the run none of the five items inline
    ledger, version, evidence = _thread(engine)
    monkeypatch.setenv("COUNCIL_INLINE_EVIDENCE_TOKENS", "0")
    wanted = evidence[2]
    script = [read_evidence(wanted[:8]), reply(_citing(version, wanted))]
    with _fake_agent(monkeypatch, tmp_path, script) as seen:
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        shown = preview(uow, ledger.thread_id, "fake")
        result = execute_run(uow, Recorder(), run_id)
    # Then it read the item through the tool, and its citation of it stands
    assert result.status == "succeeded", _run(engine, run_id)["error"]
    run = _run(engine, run_id)
    assert run["request"] == shown.request and run["request"]["tool_turns"] == 4
    assert [t["function"]["name"] for t in run["request"]["tools"]] == ["read_evidence"]
    first, second = (r["json"] for r in seen.requests)
    assert first["tools"][0]["function"]["name"] == "read_evidence"
    result_message = second["messages"][-1]
    assert result_message["role"] == "tool" and result_message["tool_call_id"] == "call_0"
    document = json.loads(result_message["content"])
    assert document["evidence_id"] == wanted and document["text"] and document["data_not_instructions"]
    # And run show names it as opened by the tool, and cited; the other four were not opened
    shown_run = show_run(uow, run_id)
    opened = {str(o.evidence_id): o for o in shown_run.opened_evidence or []}
    assert set(opened) == {wanted} and opened[wanted].opened and opened[wanted].cited
    with engine.connect() as conn:
        tools = conn.execute(
            text("SELECT file, tool FROM run_opened_evidence WHERE run_id = :r"), {"r": run_id}
        ).all()
    assert [tuple(t) for t in tools] == [("tool", "read_evidence")]
    # And both rounds' answers are kept: the tool round names its call
    answers = shown_run.answers or []
    assert len(answers) == 2 and "[tool call] read_evidence" in answers[0].text
    assert len(_claims(engine, run_id)) == 1


def test_tool_rounds_are_bounded_and_a_bad_read_is_answered_not_recorded(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a model that asks to read something not in its briefing, every time
    ledger, _, evidence = _thread(engine)
    monkeypatch.setenv("COUNCIL_INLINE_EVIDENCE_TOKENS", "0")
    monkeypatch.setenv("COUNCIL_EVIDENCE_TOOL_TURNS", "2")
    elsewhere = "6eb3cf46-5126-4993-af10-50fa3815dead"
    with _fake_agent(monkeypatch, tmp_path, [read_evidence(elsewhere)]) as seen:
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        result = execute_run(uow, Recorder(), run_id)
    # Then each read was refused as data, and after its two rounds and one re-prompt the run failed
    assert result.status == "failed"
    assert len(seen.requests) == 4
    refused = json.loads(seen.requests[1]["json"]["messages"][-1]["content"])
    assert "no evidence" in refused["error"]
    assert "rounds of tool calls" in _run(engine, run_id)["error"]
    # And nothing was recorded as opened: the item is not this thread's
    assert show_run(uow, run_id).opened_evidence in ([], None)
    assert elsewhere not in evidence


def test_an_anthropic_model_reads_through_the_tool(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a reading model behind the Anthropic Messages API, pinned by an anthropic/ profile
    ledger, _, evidence = _thread(engine)
    monkeypatch.setenv("COUNCIL_INLINE_EVIDENCE_TOKENS", "0")
    with messages_model() as (url, seen):
        path = tmp_path / "profiles.toml"
        path.write_text(
            f'[profiles.fake]\nmodel = "anthropic/claude-fake"\napi_key_env = ""\napi_base = "{url}"\n'
        )
        monkeypatch.setenv("COUNCIL_PROFILES", str(path))
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        result = execute_run(uow, Recorder(), run_id)
    # Then it read through tool_use / tool_result, and cited only what it read
    assert result.status == "succeeded", _run(engine, run_id)["error"]
    first, second = (r["json"] for r in seen.model_calls())
    assert first["tools"][0]["name"] == "read_evidence"
    assert any(
        b.get("type") == "tool_result"
        for m in second["messages"]
        for b in m["content"]
        if isinstance(b, dict)
    )
    opened = {str(o.evidence_id): o for o in show_run(uow, run_id).opened_evidence or []}
    assert opened and set(opened) <= set(evidence)
    assert all(o.opened for o in opened.values())
    assert any(o.cited for o in opened.values())
