"""Run-level outcomes through the real path (docs/architecture.md §7): ``execute_run`` with
litellm talking real HTTP to a local fake OpenAI-compatible server, against
real Postgres. Each outcome — a valid answer, invalid output with and without a
successful re-prompt, unknown ids, a rate limit, a provider that stays down, a
bad key — is checked for what the run stores and for what else was, or was
not, written. Then: preview hashes to the stored request, and fencing. (The
task's retries across tries, on real workers: tests/e2e/test_pinned_executors.py.)"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.agents.compiler import REPROMPT
from council.agents.errors import TransientLLMError
from council.agents.profiles import resolve
from council.domain.agent_output import AgentOutput, CitationOut, ClaimOut
from council.domain.bill import Bill
from council.domain.requests import CompiledRequest
from council.domain.results.runs import Executed
from council.ledger.unit import UnitOfWork
from council.services import execution, run_calls
from council.services.dispatch import dispatch
from council.services.execution import execute_run, worker_id
from council.services.in_tx.briefing import compile_for
from council.services.runs import show_run
from tests.builders import Ledger
from tests.conftest import CliRunner
from tests.engines import unit_of_work
from tests.fakes.openai_server import Recorder as Requests
from tests.fakes.openai_server import (
    Step,
    fake_openai,
    rate_limited,
    reply,
    server_error,
    unauthorized,
)
from tests.rows import counts, query, row, rows

DUMMY_KEY = "sk-dummy-run-outcomes-0123456789"
PROFILES_TOML = """\
[profiles.fake]
model = "openai/fake-model"
provider = "openai"
api_key_env = "FAKE_KEY"
api_base = "{base_url}"
"""
NOT_JSON = "I think the first proposition holds, but I would rather not answer in JSON."
REPROMPT_START = REPROMPT.split("{", 1)[0]


@pytest.fixture(autouse=True)
def _offline_profile_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Real profiles only (no simulation), a dummy key."""
    for name in list(os.environ):
        if name.startswith("COUNCIL_PROFILE"):
            monkeypatch.delenv(name)
    monkeypatch.delenv("COUNCIL_SIMULATE", raising=False)
    monkeypatch.setenv("COUNCIL_HOME", str(tmp_path))
    monkeypatch.setenv("COUNCIL_OFFLINE", "1")
    monkeypatch.setenv("FAKE_KEY", DUMMY_KEY)


@contextmanager
def _fake_agent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, script: list[Step]) -> Iterator[Requests]:
    """The profile ``fake`` pointed at a fake provider serving ``script``."""
    with fake_openai(script) as (base_url, requests):
        path = tmp_path / "profiles.toml"
        path.write_text(PROFILES_TOML.format(base_url=base_url), encoding="utf-8")
        monkeypatch.setenv("COUNCIL_PROFILES", str(path))
        yield requests


def _thread(engine: Engine) -> tuple[Ledger, list[UUID]]:
    """A thread with three evidence items (every one in a run's briefing) and two open
    propositions citing two of them."""
    ledger = Ledger.new(engine, evidence_items=3)
    heads = [
        UUID(
            str(
                ledger.node("SQLite parity holds for query semantics", cites=[ledger.evidence[0]])[
                    "version_id"
                ]
            )
        ),
        UUID(
            str(
                ledger.node("WAL mode is safe for concurrent readers", cites=[ledger.evidence[1]])[
                    "version_id"
                ]
            )
        ),
    ]
    return ledger, heads


def _dispatch(uow: UnitOfWork, scheduler: Recorder, thread_id: UUID, agent: str = "fake") -> UUID:
    created = dispatch(uow, scheduler, thread_id, [agent], mode="independent", rounds=1, actor="test")
    (run_id,) = created.run_ids
    return run_id


def _compiled(uow: UnitOfWork, agent: str, thread_id: UUID) -> CompiledRequest:
    """The request a first-round run of ``agent`` would send now."""
    with uow() as tx:
        return compile_for(tx, resolve(agent), thread_id)


def _valid_output(ledger: Ledger, heads: list[UUID]) -> AgentOutput:
    return AgentOutput(
        summary="[fake] one endorsement, one dispute.",
        claims=[
            ClaimOut(
                node_version_id=str(heads[0]),
                type="endorse",
                confidence=0.8,
                rationale="Fits the evidence.",
                cites=[CitationOut(evidence_id=str(ledger.evidence[0]), interpretation="as stated")],
            ),
            ClaimOut(
                node_version_id=str(heads[1]),
                type="dispute",
                confidence=0.6,
                rationale="Writers were not measured.",
                cites=[CitationOut(evidence_id=str(ledger.evidence[1]), role="contradicts")],
            ),
        ],
    )


def _run(engine: Engine, run_id: UUID) -> dict[str, Any]:
    with unit_of_work(engine) as conn:
        return row(conn, "agent_runs", "id = :v", v=run_id)


def _events(engine: Engine, run_id: UUID) -> list[tuple[str, dict[str, Any]]]:
    with unit_of_work(engine) as conn:
        sql = "SELECT kind, payload FROM events WHERE subject_id = :v ORDER BY id"
        found = query(conn, sql, v=str(run_id))
        return [(r["kind"], r["payload"]) for r in found]


def _written(engine: Engine) -> dict[str, int]:
    """Row count of every table, to tell what a step wrote."""
    with unit_of_work(engine) as conn:
        return counts(conn)


def _growth(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {name: after[name] - before[name] for name in after if after[name] != before[name]}


def _attempts(uow: UnitOfWork, run_id: UUID) -> list[dict[str, Any]]:
    return [a.model_dump() for a in show_run(uow, run_id).attempts]


def _claims(engine: Engine, run_id: UUID) -> list[Any]:
    with unit_of_work(engine) as conn:
        return [SimpleNamespace(**r) for r in rows(conn, "claims", "run_id = :v", v=run_id)]


# ------------------------------------------------------------------ outcomes


def test_a_valid_reply_succeeds_and_stores_claims_usage_request_and_exposures(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a thread with two open propositions and a provider that answers validly
    ledger, heads = _thread(engine)
    answer = _valid_output(ledger, heads).model_dump_json()
    scheduler = Recorder()
    with _fake_agent(monkeypatch, tmp_path, [reply(answer, prompt_tokens=120, completion_tokens=40)]) as seen:
        run_id = _dispatch(uow, scheduler, ledger.thread_id)
        expected = _compiled(uow, "fake", ledger.thread_id)
        # When a worker executes the run
        result = execute_run(uow, scheduler, run_id)
    # Then it succeeded with the request it hashed, stored before the call
    run = _run(engine, run_id)
    assert result.status == "succeeded", _run(engine, run_id)["error"]
    assert (run["status"], run["error"], run["attempt"], run["simulated"]) == ("succeeded", None, 1, False)
    assert run["request"] == expected.canonical()
    assert run["request_sha256"] == expected.sha256
    assert run["request"]["params"] == {}
    # And it ran the executor pinned at dispatch, which names the key's variable, never its value
    executor = run["executor"]
    assert (executor["model"], executor["simulated"], executor["api_key_env"]) == (
        "openai/fake-model", False, "FAKE_KEY",
    )  # fmt: skip
    assert executor["api_base"].startswith("http://127.0.0.1:")
    # And its attempt names the worker that ran it, and how it ended
    (attempt,) = _attempts(uow, run_id)
    assert (attempt["attempt"], attempt["worker"], attempt["status"]) == (1, worker_id(), "succeeded")
    assert run["usage"] == {
        "calls": 1,
        "prompt_tokens": 120,
        "completion_tokens": 40,
        "total_tokens": 160,
        "simulated": False,
        "unpriced": True,  # litellm has no price for the fake model: cost unknown, not 0
        "unpriced_reason": "no price for openai/fake-model in litellm's price map",
    }
    assert run["cost_usd"] is None
    # And the provider was sent exactly that request, with the key only in its header
    assert len(seen.requests) == 1
    sent = seen.requests[0]
    assert sent["json"]["model"] == "fake-model"
    assert sent["json"]["messages"] == run["request"]["messages"]
    assert sent["headers"]["authorization"] == f"Bearer {DUMMY_KEY}"
    assert DUMMY_KEY not in json.dumps(run, default=str)
    # And its claims, with their citations, are in the ledger
    claims = _claims(engine, run_id)
    assert {(c.node_version_id, c.claim_type) for c in claims} == {
        (heads[0], "endorse"),
        (heads[1], "dispute"),
    }
    with unit_of_work(engine) as conn:
        cited = {
            (r["claim_id"], r["evidence_id"], r["role"])
            for r in rows(conn, "citations", "run_id = :v", v=run_id)
        }
    by_version = {c.node_version_id: c.id for c in claims}
    assert cited == {
        (by_version[heads[0]], ledger.evidence[0], "supports"),
        (by_version[heads[1]], ledger.evidence[1], "contradicts"),
    }
    # And the blind briefing's propositions are recorded as exposures
    with unit_of_work(engine) as conn:
        exposures = {
            (r["kind"], r["channel"], r["node_version_id"], r["exposed_to_run_id"])
            for r in rows(conn, "run_exposures", "run_id = :v", v=run_id)
        }
    assert exposures == {("proposition", "briefing", h, None) for h in heads}
    # And consolidation of both touched versions was enqueued, and nothing more
    assert sorted(result.touched_versions) == sorted(heads)
    assert sorted(scheduler.evaluations) == sorted(heads)
    assert scheduler.runs == [run_id]
    assert [kind for kind, _ in _events(engine, run_id)] == [
        "run.started",
        "run.output_applied",
        "run.succeeded",
    ]


def test_malformed_json_twice_fails_after_one_reprompt_and_writes_nothing_else(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a provider that never answers in JSON
    ledger, _ = _thread(engine)
    scheduler = Recorder()
    with _fake_agent(monkeypatch, tmp_path, [reply(NOT_JSON)]) as seen:
        run_id = _dispatch(uow, scheduler, ledger.thread_id)
        before = _written(engine)
        # When the run is executed
        result = execute_run(uow, scheduler, run_id)
    # Then it failed with the reason, after exactly one re-prompt
    run = _run(engine, run_id)
    assert result.status == "failed"
    assert run["status"] == "failed"
    assert run["error"].startswith("invalid output after one re-prompt: ")
    assert "Invalid JSON" in run["error"]
    assert run["usage"]["calls"] == 2 and run["usage"]["reprompted"] is True
    assert len(seen.requests) == 2
    assert seen.requests[1]["json"]["messages"][-1]["content"].startswith(REPROMPT_START)
    # And nothing but the request, its exposures, the failure, the attempt's record and the two
    # answers it returned (kept, though invalid) was written
    grown = _growth(before, _written(engine))
    assert grown.pop("run_answers") == 2 and 1 <= grown.pop("answer_texts") <= 2
    assert grown == {"run_exposures": 2, "events": 2, "run_attempts": 2, "run_opened_evidence": 3}
    assert [kind for kind, _ in _events(engine, run_id)] == ["run.started", "run.failed"]
    assert _claims(engine, run_id) == []
    assert scheduler.evaluations == []


def test_malformed_then_valid_succeeds_after_one_reprompt(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a provider that answers in prose first, then validly
    ledger, heads = _thread(engine)
    answer = _valid_output(ledger, heads).model_dump_json()
    scheduler = Recorder()
    script = [reply(NOT_JSON, prompt_tokens=100, completion_tokens=20), reply(answer, prompt_tokens=150)]
    with _fake_agent(monkeypatch, tmp_path, script) as seen:
        run_id = _dispatch(uow, scheduler, ledger.thread_id)
        # When the run is executed
        result = execute_run(uow, scheduler, run_id)
    # Then it succeeded on the re-prompt, and its usage says so
    run = _run(engine, run_id)
    assert result.status == "succeeded"
    assert (run["status"], run["error"]) == ("succeeded", None)
    assert run["usage"]["reprompted"] is True
    assert run["usage"]["calls"] == 2
    assert run["usage"]["prompt_tokens"] == 250 and run["usage"]["completion_tokens"] == 27
    # And the second request was the stored one plus the invalid answer and the reason
    assert len(seen.requests) == 2
    first, second = (r["json"]["messages"] for r in seen.requests)
    assert first == run["request"]["messages"]
    assert second[:-2] == first
    assert second[-2] == {"role": "assistant", "content": NOT_JSON}
    assert second[-1]["role"] == "user"
    assert second[-1]["content"].startswith(REPROMPT_START) and "Invalid JSON" in second[-1]["content"]
    assert len(_claims(engine, run_id)) == 2


def test_unknown_ids_twice_fail_with_a_reason_naming_the_id(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a provider that keeps claiming on a node version that does not exist
    ledger, heads = _thread(engine)
    unknown = uuid.uuid4()
    answer = AgentOutput(claims=[ClaimOut(node_version_id=str(unknown), type="endorse")]).model_dump_json()
    scheduler = Recorder()
    with _fake_agent(monkeypatch, tmp_path, [reply(answer)]) as seen:
        run_id = _dispatch(uow, scheduler, ledger.thread_id)
        before = _written(engine)
        # When the run is executed
        result = execute_run(uow, scheduler, run_id)
    # Then it failed after one re-prompt with a reason naming the unknown id
    run = _run(engine, run_id)
    assert result.status == "failed"
    assert run["status"] == "failed"
    assert run["error"].startswith("invalid output after one re-prompt: ")
    assert f"no node version with id {unknown}" in run["error"]
    assert len(seen.requests) == 2
    assert str(unknown) in seen.requests[1]["json"]["messages"][-1]["content"]
    # And nothing else was written but the two answers it returned (kept, though invalid)
    grown = _growth(before, _written(engine))
    assert grown.pop("run_answers") == 2 and 1 <= grown.pop("answer_texts") <= 2
    assert grown == {"run_exposures": len(heads), "events": 2, "run_attempts": 2, "run_opened_evidence": 3}
    assert _claims(engine, run_id) == []


def test_an_unknown_id_then_a_valid_answer_succeeds_and_only_the_valid_one_is_written(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a provider whose first answer claims on a node version that does not
    # exist (only the ledger can tell), and whose second answer is valid
    ledger, heads = _thread(engine)
    unknown = uuid.uuid4()
    first = AgentOutput(
        claims=[
            ClaimOut(node_version_id=str(heads[0]), type="endorse", confidence=0.9),
            ClaimOut(node_version_id=str(unknown), type="endorse"),
        ]
    ).model_dump_json()
    answer = _valid_output(ledger, heads).model_dump_json()
    scheduler = Recorder()
    with _fake_agent(monkeypatch, tmp_path, [reply(first), reply(answer)]) as seen:
        run_id = _dispatch(uow, scheduler, ledger.thread_id)
        # When the run is executed
        result = execute_run(uow, scheduler, run_id)
    # Then the first answer was refused where it would have been written, the
    # re-prompt named the unknown id, and the second answer was applied
    assert result.status == "succeeded"
    assert len(seen.requests) == 2
    assert str(unknown) in seen.requests[1]["json"]["messages"][-1]["content"]
    assert _run(engine, run_id)["usage"]["reprompted"] is True
    # And nothing of the first answer remains: exactly the second one's claims
    claims = _claims(engine, run_id)
    assert {(c.node_version_id, c.claim_type, str(c.confidence)) for c in claims} == {
        (heads[0], "endorse", "0.800"),
        (heads[1], "dispute", "0.600"),
    }


def test_the_agents_prose_is_linted_and_the_findings_are_stored_on_the_run(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a provider whose summary calls an open proposition settled
    ledger, heads = _thread(engine)
    output = _valid_output(ledger, heads).model_copy(
        update={"summary": "SQLite parity holds for query semantics: that question is settled."}
    )
    scheduler = Recorder()
    with _fake_agent(monkeypatch, tmp_path, [reply(output.model_dump_json())]):
        run_id = _dispatch(uow, scheduler, ledger.thread_id)
        # When the run is executed
        result = execute_run(uow, scheduler, run_id)
    # Then the run succeeded (findings are recorded, not fatal) with the finding stored
    run = _run(engine, run_id)
    assert result.status == "succeeded" and result.lint_findings == 1
    (finding,) = run["lint_findings"]
    assert (finding["word"], finding["category"], finding["item_id"]) == ("settled", "settled", str(heads[0]))
    # And the run.succeeded event counts it
    assert dict(_events(engine, run_id))["run.succeeded"]["lint_findings"] == 1


def test_a_rate_limit_releases_the_run_and_the_next_try_sends_the_same_request(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a provider that answers 429 once, then validly
    ledger, heads = _thread(engine)
    answer = _valid_output(ledger, heads).model_dump_json()
    scheduler = Recorder()
    with _fake_agent(monkeypatch, tmp_path, [rate_limited(), reply(answer)]) as seen:
        run_id = _dispatch(uow, scheduler, ledger.thread_id)
        # When the run is executed, the gateway asks once and the run goes back to the queue
        with pytest.raises(TransientLLMError, match="HTTP 429"):
            execute_run(uow, scheduler, run_id)
        assert len(seen.requests) == 1
        assert (_run(engine, run_id)["status"], _run(engine, run_id)["lease_owner"]) == ("queued", None)
        # And when the task tries again
        result = execute_run(uow, scheduler, run_id, try_no=2)
    # Then the same request was sent again and the run succeeded on its second attempt
    run = _run(engine, run_id)
    assert result.status == "succeeded"
    assert (run["status"], run["attempt"], run["usage"]["calls"]) == ("succeeded", 2, 1)
    assert "reprompted" not in run["usage"]
    assert len(seen.requests) == 2
    assert seen.requests[0]["json"] == seen.requests[1]["json"]
    assert len(_claims(engine, run_id)) == 2
    # And each attempt's record says how it ended
    assert [(a["attempt"], a["status"]) for a in _attempts(uow, run_id)] == [
        (1, "released"),
        (2, "succeeded"),
    ]
    assert "HTTP 429" in _attempts(uow, run_id)[0]["reason"]


def test_a_provider_that_stays_down_requeues_the_run_with_its_request_then_fails_it_on_the_last_try(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a provider that answers 500 to everything
    ledger, _ = _thread(engine)
    scheduler = Recorder()
    with _fake_agent(monkeypatch, tmp_path, [server_error()]) as seen:
        run_id = _dispatch(uow, scheduler, ledger.thread_id)
        # When the run is executed, the gateway asks exactly once
        with pytest.raises(TransientLLMError) as first:
            execute_run(uow, scheduler, run_id)
        # Then the run is back in the queue with its request stored, for any worker to retry
        run = _run(engine, run_id)
        assert (run["status"], run["attempt"], run["lease_owner"], run["error"]) == ("queued", 1, None, None)
        stored, stored_sha = run["request"], run["request_sha256"]
        assert len(seen.requests) == 1
        assert "HTTP 500" in str(first.value)
        # And when the thread changes before the retry, the retry still resends the stored request
        ledger.node("A proposition added between the attempts")
        assert _compiled(uow, "fake", ledger.thread_id).sha256 != stored_sha
        exposures_before = _written(engine)["run_exposures"]
        with pytest.raises(TransientLLMError):
            execute_run(uow, scheduler, run_id, try_no=2)
        run = _run(engine, run_id)
        assert (run["status"], run["attempt"]) == ("queued", 2)
        assert (run["request"], run["request_sha256"]) == (stored, stored_sha)
        # When the last try the retry policy allows fails too
        result = execute_run(uow, scheduler, run_id, try_no=3, last_try=True)
    # Then the run failed with the reason and the number of tries, and nothing else came of it
    run = _run(engine, run_id)
    assert result.status == "failed"
    assert run["status"] == "failed" and run["request_sha256"] == stored_sha
    assert (
        run["error"].startswith("no answer after 3 tries: openai/fake-model: ") and "HTTP 500" in run["error"]
    )
    assert len(seen.requests) == 3
    assert all(r["json"]["messages"] == stored["messages"] for r in seen.requests)
    assert _written(engine)["run_exposures"] == exposures_before
    assert [kind for kind, _ in _events(engine, run_id)] == ["run.started", "run.failed"]
    assert [(a["attempt"], a["status"]) for a in _attempts(uow, run_id)] == [
        (1, "released"),
        (2, "released"),
        (3, "failed"),
    ]
    assert _claims(engine, run_id) == []
    assert scheduler.evaluations == []


def test_a_bad_key_fails_at_once_and_the_key_is_nowhere_stored(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a provider that refuses the key and echoes it in its error message
    ledger, _ = _thread(engine)
    scheduler = Recorder()
    with _fake_agent(monkeypatch, tmp_path, [unauthorized()]) as seen:
        run_id = _dispatch(uow, scheduler, ledger.thread_id)
        before = _written(engine)
        # When the run is executed
        result = execute_run(uow, scheduler, run_id)
    # Then it failed at once, without a retry, with an authentication reason
    run = _run(engine, run_id)
    assert result.status == "failed"
    assert run["status"] == "failed"
    assert "authentication" in run["error"].lower()
    assert len(seen.requests) == 1
    assert DUMMY_KEY in seen.requests[0]["headers"]["authorization"]  # it was sent, and echoed back
    # And the key is in no stored reason, run or event, and nothing else was written
    assert DUMMY_KEY not in run["error"]
    assert DUMMY_KEY not in json.dumps(run, default=str)
    with unit_of_work(engine) as conn:
        events = [json.dumps(r, default=str) for r in rows(conn, "events")]
    assert not [e for e in events if DUMMY_KEY in e]
    # (the evidence it was given inline, every item of the thread, is recorded as read before the call)
    assert _growth(before, _written(engine)) == {
        "run_exposures": 2,
        "events": 2,
        "run_attempts": 2,
        "run_opened_evidence": 3,
    }
    assert _claims(engine, run_id) == []


# ------------------------------------------------------- preview and fencing


def test_preview_hashes_to_the_request_the_run_stores(
    engine: Engine, uow: UnitOfWork, cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a thread and the simulated stand-in for claude
    monkeypatch.setenv("COUNCIL_SIMULATE", "1")
    ledger, _ = _thread(engine)
    # When the request is previewed, in process and by the CLI
    compiled = _compiled(uow, "claude", ledger.thread_id)
    shown = cli(
        "preview",
        "--thread",
        str(ledger.thread_id),
        "--agent",
        "claude",
        "--json",
        env={"COUNCIL_SIMULATE": "1"},
    )
    assert shown.code == 0, shown.stderr
    preview = shown.json()
    # And a run of claude is dispatched and executed with nothing changed in between
    scheduler = Recorder()
    run_id = _dispatch(uow, scheduler, ledger.thread_id, agent="claude")
    result = execute_run(uow, scheduler, run_id)
    # Then both previews hash to exactly the request the run stored
    run = _run(engine, run_id)
    assert result.status == "succeeded"
    assert run["simulated"] is True and preview["simulated"] is True
    assert preview["request_sha256"] == compiled.sha256 == run["request_sha256"]
    assert preview["request"] == run["request"]


def test_a_second_execution_of_a_finished_run_is_skipped_and_writes_nothing(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a run that a worker has executed (simulated claude)
    monkeypatch.setenv("COUNCIL_SIMULATE", "1")
    ledger, _ = _thread(engine)
    scheduler = Recorder()
    run_id = _dispatch(uow, scheduler, ledger.thread_id, agent="claude")
    assert execute_run(uow, scheduler, run_id).status == "succeeded"
    before, run_before = _written(engine), _run(engine, run_id)
    enqueued = (list(scheduler.runs), list(scheduler.evaluations))
    # When its message is delivered again
    result = execute_run(uow, scheduler, run_id)
    # Then the second execution is skipped: no row, no event, no enqueue
    assert result == Executed(run_id=run_id, status="skipped")
    assert _written(engine) == before
    assert _run(engine, run_id) == run_before
    assert (scheduler.runs, scheduler.evaluations) == enqueued


def test_a_zombie_attempt_writes_nothing_once_its_lease_was_taken_over(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a run claimed by a worker whose lease expired at once, then taken over
    monkeypatch.setenv("COUNCIL_SIMULATE", "1")
    ledger, heads = _thread(engine)
    run_id = _dispatch(uow, Recorder(), ledger.thread_id, agent="claude")
    with uow() as tx:
        zombie = tx.runs.begin(run_id, owner="zombie", lease_s=0).run
    with uow() as tx:
        successor = tx.runs.begin(run_id, owner="successor", lease_s=300).run
    assert zombie is not None and successor is not None
    assert (zombie.attempt, successor.attempt) == (1, 2)
    output = _valid_output(ledger, heads)
    before, run_before = _written(engine), _run(engine, run_id)
    scheduler = Recorder()
    # When the zombie attempt tries to finish the run
    applied = run_calls.apply_answer(uow, run_id, 1, output, bill=Bill({"calls": 1}, None))
    # Then it is fenced out and nothing was written
    assert applied is None
    with uow() as tx:
        assert tx.runs.fence(run_id, 1) is None  # what failing it (fence, then finish) first asks
    assert execution._failed(uow, scheduler, zombie, 1, "zombie failure", bill=Bill()).status == "fenced"
    with uow() as tx:
        assert tx.runs.release(run_id, 1, "zombie retry") is False
    compiled = _compiled(uow, "claude", ledger.thread_id)
    with uow() as tx:
        assert tx.runs.store_request(run_id, 1, compiled) is False
    assert _written(engine) == before
    assert _run(engine, run_id) == run_before
    assert (run_before["status"], run_before["lease_owner"]) == ("running", "successor")
    assert (scheduler.runs, scheduler.evaluations) == ([], [])
    # And the attempt that owns the run still can
    done = run_calls.apply_answer(uow, run_id, 2, output, bill=Bill({"calls": 1}, None))
    assert done is not None and len(done[0].claims) == 2
    assert _run(engine, run_id)["status"] == "succeeded"
    # And the attempts' record says who held each, and that the first lost its lease to the second
    assert [(a["attempt"], a["worker"], a["status"]) for a in _attempts(uow, run_id)] == [
        (1, "zombie", "lease_expired"),
        (2, "successor", "succeeded"),
    ]
    assert _attempts(uow, run_id)[0]["reason"] == "lease expired; taken over by successor"
