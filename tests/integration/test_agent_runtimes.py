"""Runs executed by the real Codex CLI and Claude Code (docs/architecture.md §7), offline:
each CLI talks to a local fake model server (tests/fakes), against real Postgres.

Each outcome — an answer after reading an evidence file with the CLI's own
tool, 401, the turn limit, a server that never answers (the deadline), an
invalid answer re-prompted once, invalid twice, a missing CLI — is checked
for what the run stores: status and reason, request and hash (equal to the
preview's), trace, opened evidence, and that nothing else was written.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.agents.profiles import resolve
from council.agents.runtimes import sandbox
from council.ledger.unit import UnitOfWork
from council.services.dispatch import dispatch
from council.services.execution import execute_run
from council.services.in_tx.briefing import compile_for
from council.services.runs import show_run
from tests.agent_clis import KEYS, profiles_toml, require_agent_clis
from tests.builders import Ledger
from tests.conftest import CliRunner
from tests.dashboard import view_rows
from tests.engines import unit_of_work
from tests.fakes.agent_model import Recorder as Requests
from tests.fakes.anthropic_server import fake_anthropic
from tests.fakes.responses_server import fake_responses
from tests.rows import counts, row, rows

AGENTS = ("codex", "claude")


@pytest.fixture(autouse=True)
def _cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    require_agent_clis()
    for name in list(os.environ):
        if name.startswith("COUNCIL_PROFILE"):
            monkeypatch.delenv(name)
    monkeypatch.delenv("COUNCIL_SIMULATE", raising=False)
    monkeypatch.setenv("COUNCIL_HOME", str(tmp_path))
    monkeypatch.setenv("COUNCIL_OFFLINE", "1")
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


@contextmanager
def _servers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, behaviour: str, **profile: Any
) -> Iterator[dict[str, Requests]]:
    """Both fake servers with ``behaviour``, and the codex and claude profiles pointed at them."""
    with ExitStack() as stack:
        responses, codex_seen = stack.enter_context(fake_responses(behaviour))
        anthropic, claude_seen = stack.enter_context(fake_anthropic(behaviour))
        bases = {
            "responses": responses,
            "anthropic": anthropic,
            **{k: v for k, v in profile.items() if k in ("responses", "anthropic")},
        }
        limits = {k: v for k, v in profile.items() if k in ("max_turns", "timeout_s")}
        path = tmp_path / "profiles.toml"
        path.write_text(profiles_toml(**bases, **limits), encoding="utf-8")
        monkeypatch.setenv("COUNCIL_PROFILES", str(path))
        yield {"codex": codex_seen, "claude": claude_seen}


def _thread(engine: Engine) -> tuple[Ledger, list[UUID]]:
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


def _dispatch(uow: UnitOfWork, thread_id: UUID, agent: str) -> UUID:
    created = dispatch(uow, Recorder(), thread_id, [agent], mode="independent", rounds=1, actor="test")
    (run_id,) = created.run_ids
    return run_id


def _run(engine: Engine, run_id: UUID) -> dict[str, Any]:
    with unit_of_work(engine) as conn:
        return row(conn, "agent_runs", "id = :v", v=run_id)


def _written(engine: Engine) -> dict[str, int]:
    with unit_of_work(engine) as conn:
        return counts(conn)


def _growth(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {name: after[name] - before[name] for name in after if after[name] != before[name]}


def _nothing_holds_a_key(engine: Engine) -> None:
    with unit_of_work(engine) as conn:
        dumped = json.dumps(
            [rows(conn, table) for table in ("agent_runs", "run_traces", "events", "run_attempts")],
            default=str,
        )
    for value in KEYS.values():
        assert value not in dumped


# ------------------------------------------------------------------ outcomes


@pytest.mark.parametrize("agent", AGENTS)
def test_a_cli_run_reads_evidence_with_its_tool_answers_and_records_what_it_opened(
    engine: Engine,
    uow: UnitOfWork,
    cli: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    agent: str,
) -> None:
    # Given a thread with evidence, and a model that first asks the CLI to read an evidence file
    ledger, _ = _thread(engine)
    with _servers(monkeypatch, tmp_path, "read") as seen:
        # And the request previewed, in process and by `council preview`
        with uow() as tx:
            preview = compile_for(tx, resolve(agent), ledger.thread_id)
        env = {"COUNCIL_PROFILES": os.environ["COUNCIL_PROFILES"], **KEYS}
        shown_preview = cli("preview", "--thread", str(ledger.thread_id), "--agent", agent, "--json", env=env)
        assert shown_preview.code == 0, shown_preview.stderr
        run_id = _dispatch(uow, ledger.thread_id, agent)
        # When a worker executes the run
        result = execute_run(uow, Recorder(), run_id)
    # Then it succeeded, with exactly the request both previews hashed
    run = _run(engine, run_id)
    assert (result.status, run["status"], run["error"]) == ("succeeded", "succeeded", None), run["error"]
    assert run["request_sha256"] == preview.sha256 == shown_preview.json()["request_sha256"]
    assert run["request"] == preview.canonical() == shown_preview.json()["request"]
    request = run["request"]
    runtime = "codex-cli" if agent == "codex" else "claude-code"
    assert (request["runtime"], request["runtime_version"]) == (runtime, run["executor"]["cli_version"])
    assert "$schema" not in request["settings"]["output_schema"]
    # And the CLI really called the fake server twice: the tool call, then the answer
    assert len(seen[agent].model_calls()) >= 2
    # And the trace holds the tool call; the opened evidence is the file it read, set beside what it cited
    shown = show_run(uow, run_id)
    assert shown.runtime == runtime and shown.trace and shown.opened_evidence is not None
    # And the CLI's final text is kept as the run's answer, by its SHA-256
    assert shown.answer is not None and '"claims"' in shown.answer.text
    assert shown.answer.sha256 == hashlib.sha256(shown.answer.text.encode()).hexdigest()
    (trace,) = shown.trace
    assert trace.exit_status == 0 and trace.trace["files_read"] and trace.trace["usage"]
    assert trace.cli_version == run["executor"]["cli_version"]
    opened = [o for o in shown.opened_evidence if o.opened]
    files = {f["evidence_id"]: f for f in request["settings"]["evidence_files"]}
    read = " ".join(trace.trace["files_read"])
    assert opened and all(files[str(o.evidence_id)]["file"] in read for o in opened)
    with unit_of_work(engine) as conn:
        cited = {r["evidence_id"] for r in rows(conn, "citations", "run_id = :v", v=run_id)}
    assert {o.evidence_id for o in shown.opened_evidence if o.cited} == cited
    # And it cited only evidence it opened (the output check refuses anything else)
    assert cited <= {o.evidence_id for o in opened}
    # And every listed evidence id appears in the prompt, yet only the files it read count as opened
    listed = request["settings"]["evidence_files"]
    assert all(f["evidence_id"] in request["prompt"] for f in listed)
    assert {str(o.evidence_id) for o in opened} == {f["evidence_id"] for f in listed if f["file"] in read}
    # And `council run show` tells a person the same: the call, its CLI, what it read and cited
    human = cli("run", "show", str(run_id), env={**env, "NO_COLOR": "1", "COLUMNS": "200"})
    assert human.code == 0, human.stderr
    assert f"attempt 1 call 1: {runtime} {trace.cli_version}, exit 0" in human.stdout
    assert f"{len(trace.trace['files_read'])} file(s) read" in human.stdout
    assert f"{str(opened[0].evidence_id)[:8]} opened" in human.stdout
    for item in shown.opened_evidence:
        if item.cited:
            assert str(item.evidence_id)[:8] in human.stdout
    # And claims landed, and no key was stored anywhere
    assert shown.claims
    _nothing_holds_a_key(engine)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_cli_run_citing_evidence_it_never_opened_is_re_prompted_then_fails_saying_so(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, agent: str
) -> None:
    # Given a model that cites the briefing's evidence without opening any of its files
    ledger, _ = _thread(engine)
    with _servers(monkeypatch, tmp_path, "careless"):
        run_id = _dispatch(uow, ledger.thread_id, agent)
        result = execute_run(uow, Recorder(), run_id)
    # Then the answer was refused, re-prompted once, and the run failed naming what it did not read
    run = _run(engine, run_id)
    assert result.status == "failed" and run["usage"]["calls"] == 2, run["error"]
    assert "did not read" in run["error"] and "evidence/" in run["error"]
    # And it wrote no claim and no citation: the record never says it relied on unread text
    with unit_of_work(engine) as conn:
        assert rows(conn, "claims", "run_id = :v", v=run_id) == []
        assert rows(conn, "citations", "run_id = :v", v=run_id) == []


@pytest.mark.parametrize("agent", AGENTS)
def test_an_invalid_answer_is_re_prompted_once_and_then_succeeds(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, agent: str
) -> None:
    ledger, _ = _thread(engine)
    with _servers(monkeypatch, tmp_path, "invalid_once"):
        run_id = _dispatch(uow, ledger.thread_id, agent)
        result = execute_run(uow, Recorder(), run_id)
    run = _run(engine, run_id)
    assert result.status == "succeeded", run["error"]
    assert run["usage"]["reprompted"] is True and run["usage"]["calls"] == 2
    assert [tr.call for tr in show_run(uow, run_id).trace or []] == [1, 2]


@pytest.mark.parametrize(("agent", "behaviour"), [(a, b) for a in AGENTS for b in ("invalid", "unknown_ids")])
def test_invalid_twice_fails_with_the_reason_and_writes_nothing_else(
    engine: Engine,
    uow: UnitOfWork,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    agent: str,
    behaviour: str,
) -> None:
    ledger, _ = _thread(engine)
    with _servers(monkeypatch, tmp_path, behaviour):
        run_id = _dispatch(uow, ledger.thread_id, agent)
        before = _written(engine)
        result = execute_run(uow, Recorder(), run_id)
    run = _run(engine, run_id)
    assert result.status == "failed"
    assert run["error"].startswith("invalid output after one re-prompt")
    # Only the run's own record: its request and exposures, attempt rows, events, the two
    # traces and the two answers it returned (kept, though invalid)
    grown = _growth(before, _written(engine))
    own = {"run_exposures", "run_attempts", "events", "run_traces", "run_answers", "answer_texts"}
    assert set(grown) <= own
    assert grown["run_traces"] == 2 and grown["run_answers"] == 2


@pytest.mark.parametrize("agent", AGENTS)
def test_a_refused_key_fails_the_run_as_authentication_refused(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, agent: str
) -> None:
    ledger, _ = _thread(engine)
    with _servers(monkeypatch, tmp_path, "unauthorized", timeout_s=60):
        run_id = _dispatch(uow, ledger.thread_id, agent)
        result = execute_run(uow, Recorder(), run_id)
    run = _run(engine, run_id)
    assert result.status == "failed"
    assert "authentication refused" in run["error"], run["error"]
    assert show_run(uow, run_id).trace
    _nothing_holds_a_key(engine)


@pytest.mark.parametrize("agent", AGENTS)
def test_the_turn_limit_ends_the_run(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, agent: str
) -> None:
    ledger, _ = _thread(engine)
    with _servers(monkeypatch, tmp_path, "tools_forever", max_turns=2):
        run_id = _dispatch(uow, ledger.thread_id, agent)
        result = execute_run(uow, Recorder(), run_id)
    run = _run(engine, run_id)
    assert result.status == "failed"
    assert "turn limit reached (max_turns 2)" in run["error"], run["error"]


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.mark.parametrize("agent", AGENTS)
def test_an_unreachable_provider_fails_the_run_at_once_with_the_reason(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, agent: str
) -> None:
    # Given profiles whose server is not there (the CLIs would retry a 502 for minutes), a 60 s deadline
    ledger, _ = _thread(engine)
    nowhere = _closed_port()
    with _servers(
        monkeypatch, tmp_path, "answer", responses=nowhere + "/v1", anthropic=nowhere, timeout_s=60
    ):
        run_id = _dispatch(uow, ledger.thread_id, agent)
        # When the last try the retry policy allows runs
        began = time.monotonic()
        result = execute_run(uow, Recorder(), run_id, last_try=True)
        took = time.monotonic() - began
    # Then Council's provider proxy answered 502 and the attempt ended at once, saying why
    run = _run(engine, run_id)
    assert result.status == "failed"
    assert "provider unreachable at http://127.0.0.1:" in run["error"], run["error"]
    assert took < 30, took
    (trace,) = show_run(uow, run_id).trace or []
    assert trace.stopped in ("provider unreachable", None), trace.stopped


def test_a_kernel_without_landlock_fails_the_run_saying_so_and_runs_no_cli(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a worker whose kernel has no Landlock (as this one would say), the sandbox on
    ledger, _ = _thread(engine)
    with _servers(monkeypatch, tmp_path, "answer") as seen:
        run_id = _dispatch(uow, ledger.thread_id, "claude")
        monkeypatch.setattr(sandbox, "abi", lambda: 0)
        result = execute_run(uow, Recorder(), run_id)
    # Then the run failed with the reason and how to opt out, and no CLI called the model
    run = _run(engine, run_id)
    assert result.status == "failed"
    assert "no Landlock" in run["error"] and "COUNCIL_AGENT_SANDBOX=off" in run["error"], run["error"]
    assert seen["claude"].requests == []


def test_a_missing_cli_fails_the_run_saying_how_to_install_it(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ledger, _ = _thread(engine)
    with _servers(monkeypatch, tmp_path, "answer"):
        run_id = _dispatch(uow, ledger.thread_id, "codex")
        monkeypatch.setenv("COUNCIL_AGENT_CLIS", str(tmp_path / "no-clis-here"))
        result = execute_run(uow, Recorder(), run_id)
    run = _run(engine, run_id)
    assert result.status == "failed"
    assert "is not installed" in run["error"] and "make agent-clis" in run["error"], run["error"]


def test_the_opened_evidence_view_answers_for_the_dashboard_role(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ledger, _ = _thread(engine)
    with _servers(monkeypatch, tmp_path, "read"):
        run_id = _dispatch(uow, ledger.thread_id, "claude")
        assert execute_run(uow, Recorder(), run_id).status == "succeeded"
    rows = view_rows(engine, "council_v_opened_evidence", run_id=run_id)
    assert [r["runtime"] for r in rows] == ["claude-code"] * len(rows)
    # the first file it was asked to read, and every file it cites (opened before citing)
    assert sum(r["opened"] for r in rows) >= 1 and all(r["opened"] for r in rows if r["cited"])


def test_a_cli_that_exits_non_zero_fails_the_run_with_its_status_and_what_it_said(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a run pinned to the Codex CLI, and a worker whose codex of that version exits 3
    ledger, _ = _thread(engine)
    tools = tmp_path / "broken-clis"
    (tools / "node_modules" / ".bin").mkdir(parents=True)
    (tools / "node_modules" / "@openai" / "codex").mkdir(parents=True)
    (tools / "node_modules" / "@openai" / "codex" / "package.json").write_text('{"version": "0.171.0"}')
    broken = tools / "node_modules" / ".bin" / "codex"
    broken.write_text("#!/bin/sh\necho 'error: the configuration is broken' >&2\nexit 3\n")
    broken.chmod(0o755)
    with _servers(monkeypatch, tmp_path, "answer"):
        run_id = _dispatch(uow, ledger.thread_id, "codex")
        monkeypatch.setenv("COUNCIL_AGENT_CLIS", str(tools))
        before = _written(engine)
        result = execute_run(uow, Recorder(), run_id)
    # Then the run failed with the exit status and the CLI's last words, and nothing else was written
    run = _run(engine, run_id)
    assert result.status == "failed"
    assert "exited with status 3" in run["error"] and "the configuration is broken" in run["error"], run[
        "error"
    ]
    assert set(_growth(before, _written(engine))) <= {"run_exposures", "run_attempts", "events", "run_traces"}
