"""What ran is what the run says ran (docs/architecture.md §7): the executor is pinned at
dispatch, and the worker runs exactly that or fails the run with its reason.

Real Postgres, ``execute_run`` in process (the worker's environment is this
process's, changed between dispatch and execution), a fake OpenAI-compatible
server that records what it was sent; and the CLI faces over the same
database: ``--simulate never``, ``council profiles``, ``council run show``,
``council run record --provider``. Two real workers: tests/e2e/test_pinned_executors.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine, text

from council.adapters.scheduler import Recorder
from council.domain.agent_output import AgentOutput, ClaimOut
from council.ledger.unit import UnitOfWork
from council.services.dispatch import dispatch
from council.services.execution import execute_run, worker_id
from council.services.runs import show_run
from tests.builders import Ledger
from tests.conftest import CliRunner
from tests.engines import unit_of_work
from tests.fakes.openai_server import fake_openai, reply
from tests.rows import counts, query, row

FAKE_KEY_VAR = "COUNCIL_TEST_PINNED_KEY"
FAKE_KEY = "sk-pinned-runs-0123456789abcdef"
PROFILE = """\
[profiles.fake]
model = "openai/fake-model"
api_key_env = "{key_var}"
api_base = "{base_url}"

[profiles.local]
model = "openai/local-model"
api_key_env = ""
api_base = "{base_url}"

[profiles.cli]
runtime = "codex-cli"
model = "gpt-5.5"
api_key_env = ""
"""


@pytest.fixture(autouse=True)
def _profile_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("COUNCIL_PROFILE") or name == "COUNCIL_SIMULATE":
            monkeypatch.delenv(name)
    monkeypatch.setenv("COUNCIL_HOME", str(tmp_path))
    monkeypatch.setenv("COUNCIL_OFFLINE", "1")


def _profiles_file(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "profiles.toml"
    path.write_text(PROFILE.format(key_var=FAKE_KEY_VAR, base_url=base_url), encoding="utf-8")
    return path


def _answer(version_id: Any) -> str:
    return AgentOutput(
        summary="[fake] one endorsement.", claims=[ClaimOut(node_version_id=str(version_id), type="endorse")]
    ).model_dump_json()


def _one_run(uow: UnitOfWork, thread_id: UUID, agent: str) -> UUID:
    created = dispatch(uow, Recorder(), thread_id, [agent], mode="independent", rounds=1, actor="t")
    return created.run_ids[0]


def _run(engine: Engine, run_id: UUID) -> dict[str, Any]:
    with unit_of_work(engine) as conn:
        return row(conn, "agent_runs", "id = :v", v=run_id)


def _rows(engine: Engine) -> dict[str, int]:
    with unit_of_work(engine) as conn:
        return counts(conn)


# ------------------------------------------------------ the worker's side


def test_a_real_pinned_run_on_a_worker_without_its_key_fails_naming_the_variable_and_the_worker(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ledger = Ledger.new(engine)
    version = ledger.node()["version_id"]
    with fake_openai([reply(_answer(version))]) as (url, seen):
        monkeypatch.setenv("COUNCIL_PROFILES", str(_profiles_file(tmp_path, url)))
        # Given a run dispatched where the key is set: pinned real
        monkeypatch.setenv(FAKE_KEY_VAR, FAKE_KEY)
        run_id = _one_run(uow, ledger.thread_id, "fake")
        assert (_run(engine, run_id)["model"], _run(engine, run_id)["simulated"]) == (
            "openai/fake-model",
            False,
        )
        # When a worker without the key executes it
        monkeypatch.delenv(FAKE_KEY_VAR)
        result = execute_run(uow, Recorder(), run_id)
    # Then it failed with a reason naming the variable, the worker and the profile; nothing was called
    run = _run(engine, run_id)
    expected = f"worker {worker_id()} has no {FAKE_KEY_VAR} for the real profile fake (openai/fake-model)"
    assert (result.status, run["status"], run["error"]) == ("failed", "failed", expected)
    assert seen.requests == []
    # And the ledger still says what was pinned: the real model, not simulated; no request was stored
    assert (run["model"], run["simulated"], run["request"]) == ("openai/fake-model", False, None)
    (attempt,) = show_run(uow, run_id).attempts
    assert (attempt.worker, attempt.status, attempt.reason) == (worker_id(), "failed", expected)


def test_a_simulated_pinned_run_stays_simulated_on_a_worker_with_the_key(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ledger = Ledger.new(engine)
    version = ledger.node()["version_id"]
    with fake_openai([reply(_answer(version))]) as (url, seen):
        monkeypatch.setenv("COUNCIL_PROFILES", str(_profiles_file(tmp_path, url)))
        # Given a run dispatched where the key is unset: pinned simulated
        monkeypatch.delenv(FAKE_KEY_VAR, raising=False)
        run_id = _one_run(uow, ledger.thread_id, "fake")
        # When a worker that has the key executes it
        monkeypatch.setenv(FAKE_KEY_VAR, FAKE_KEY)
        result = execute_run(uow, Recorder(), run_id)
    # Then the simulator answered, as pinned; the real endpoint was never called
    run = _run(engine, run_id)
    assert result.status == "succeeded"
    assert (run["model"], run["simulated"], run["usage"]["simulated"]) == ("council-sim/fake", True, True)
    assert run["request"]["model"] == "council-sim/fake"
    assert seen.requests == []
    assert run["executor"]["why"] == f"{FAKE_KEY_VAR} is unset"
    assert run["executor"]["stands_in_for"] == {"runtime": "litellm", "model": "openai/fake-model"}


def test_the_worker_runs_the_pinned_executor_not_its_own_profiles(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ledger = Ledger.new(engine)
    version = ledger.node()["version_id"]
    monkeypatch.setenv(FAKE_KEY_VAR, FAKE_KEY)
    with (
        fake_openai([reply(_answer(version))]) as (url, seen),
        fake_openai([reply("never")]) as (other, wrong),
    ):
        # Given a run pinned to the profile as the dispatching machine had it
        monkeypatch.setenv("COUNCIL_PROFILES", str(_profiles_file(tmp_path, url)))
        run_id = _one_run(uow, ledger.thread_id, "fake")
        # When the worker's own profiles say something else (another endpoint), or are broken
        elsewhere = tmp_path / "worker.toml"
        elsewhere.write_text(PROFILE.format(key_var=FAKE_KEY_VAR, base_url=other), encoding="utf-8")
        monkeypatch.setenv("COUNCIL_PROFILES", str(elsewhere))
        monkeypatch.setenv("COUNCIL_PROFILE_FAKE_MODLE", "a typo that would refuse every profile")
        result = execute_run(uow, Recorder(), run_id)
    # Then the pinned endpoint was called, with the pinned key variable's value
    assert result.status == "succeeded"
    assert len(seen.requests) == 1 and wrong.requests == []
    assert seen.requests[0]["headers"]["authorization"] == f"Bearer {FAKE_KEY}"


def test_a_profile_with_its_own_endpoint_and_no_key_never_receives_the_workers_openai_key(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ledger = Ledger.new(engine)
    version = ledger.node()["version_id"]
    worker_key = "sk-the-workers-openai-key-0123456789"
    with fake_openai([reply(_answer(version))]) as (url, seen):
        monkeypatch.setenv("COUNCIL_PROFILES", str(_profiles_file(tmp_path, url)))
        run_id = _one_run(uow, ledger.thread_id, "local")
        # When a worker with an OPENAI_API_KEY of its own runs it
        monkeypatch.setenv("OPENAI_API_KEY", worker_key)
        result = execute_run(uow, Recorder(), run_id)
    assert result.status == "succeeded"
    assert _run(engine, run_id)["simulated"] is False
    (sent,) = seen.requests
    assert sent["headers"]["authorization"] != f"Bearer {worker_key}"
    assert worker_key not in json.dumps(seen.requests)


def test_a_pinned_cli_runtime_on_a_worker_without_the_cli_fails_saying_how_to_install_it(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ledger = Ledger.new(engine)
    monkeypatch.setenv("COUNCIL_PROFILES", str(_profiles_file(tmp_path, "http://127.0.0.1:9/v1")))
    run_id = _one_run(uow, ledger.thread_id, "cli")
    assert _run(engine, run_id)["executor"]["runtime"] == "codex-cli"
    monkeypatch.setenv("COUNCIL_AGENT_CLIS", str(tmp_path / "no-clis"))
    result = execute_run(uow, Recorder(), run_id)
    assert result.status == "failed"
    error = _run(engine, run_id)["error"]
    assert error.startswith(
        f"worker {worker_id()} cannot run the profile cli (gpt-5.5): the @openai/codex CLI"
    )
    assert "is not installed" in error and "make agent-clis" in error


def _raw_run(engine: Engine, thread_id: UUID, model: str, executor: dict[str, Any] | None) -> UUID:
    with unit_of_work(engine) as conn:
        return UUID(
            str(
                conn.execute(
                    text(
                        "INSERT INTO agent_runs (thread_id, agent, model, provider, simulated, mode, status, "
                        "executor) VALUES (:t, 'claude', :m, 'anthropic', false, 'independent', 'queued', "
                        "CAST(:e AS jsonb)) RETURNING id"
                    ),
                    {"t": thread_id, "m": model, "e": json.dumps(executor) if executor else None},
                ).scalar_one()
            )
        )


def test_a_run_without_a_pinned_executor_fails_and_is_never_resolved_on_the_worker(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given a run created before executors were pinned (migration 0006)
    ledger = Ledger.new(engine)
    run_id = _raw_run(engine, ledger.thread_id, "anthropic/claude-sonnet-4-6", None)
    # When a worker takes it, it fails it rather than resolve a profile of its own
    result = execute_run(uow, Recorder(), run_id)
    assert result.status == "failed"
    assert _run(engine, run_id)["error"] == "the run has no pinned executor; dispatch it again"


def test_an_answer_whose_simulated_flag_disagrees_with_the_pin_fails_the_run(
    engine: Engine, uow: UnitOfWork
) -> None:
    # Given a run pinned as real whose model is, in fact, the simulator's
    ledger = Ledger.new(engine)
    ledger.node()
    pinned = {"profile": "claude", "runtime": "litellm", "model": "council-sim/claude",
              "provider": "anthropic", "api_base": None, "api_key_env": "", "params": {},
              "simulated": False}  # fmt: skip
    run_id = _raw_run(engine, ledger.thread_id, "council-sim/claude", pinned)
    # When it runs, the completion says simulated: the run fails instead of recording a lie
    result = execute_run(uow, Recorder(), run_id)
    run = _run(engine, run_id)
    assert result.status == "failed" and run["simulated"] is False
    assert "the answer says simulated=True, the pinned executor simulated=False" in run["error"]
    assert _rows(engine)["claims"] == 0


def test_the_next_round_runs_the_executor_its_parent_was_pinned_to(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a two-round deliberative dispatch pinned simulated (no keys where it was dispatched)
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZAI_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    ledger = Ledger.new(engine)
    ledger.node()
    scheduler = Recorder()
    created = dispatch(
        uow, scheduler, ledger.thread_id, ["claude", "codex"], mode="deliberative", rounds=2, actor="t"
    )
    # When round 1 runs on a worker that has a key, and round 2 is created by the last of them
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-worker-0123456789abcdef")
    for run_id in created.run_ids:
        assert execute_run(uow, scheduler, run_id).status == "succeeded"
    with unit_of_work(engine) as conn:
        rows = [
            SimpleNamespace(**r)
            for r in query(
                conn,
                "SELECT round, agent, parent_run_id, executor FROM agent_runs WHERE dispatch_id = :v"
                " ORDER BY round, agent",
                v=created.dispatch_id,
            )
        ]
    # Then each round-2 run carries its parent's executor, simulated as pinned
    first = {r.agent: r for r in rows if r.round == 1}
    second = [r for r in rows if r.round == 2]
    assert len(second) == 2
    for run in second:
        assert run.parent_run_id is not None and run.executor == first[run.agent].executor
        assert run.executor["simulated"] is True


# ------------------------------------------------------------------ faces


def test_dispatch_under_never_exits_2_naming_profiles_and_variables_and_writes_nothing(
    engine: Engine, cli: CliRunner, redis_url: str
) -> None:
    ledger = Ledger.new(engine)
    ledger.node()
    before = _rows(engine)
    no_keys = {
        "COUNCIL_BROKER_URL": redis_url,
        "ANTHROPIC_API_KEY": "",
        "OPENAI_API_KEY": "x",
        "ZAI_API_KEY": "",
    }
    args = ("dispatch", "--thread", str(ledger.thread_id), "--agents", "claude,codex,glm")
    # When the variable says never
    by_variable = cli(*args, "--json", env={**no_keys, "COUNCIL_SIMULATE": "never"})
    # And when the option does, over a variable that says always
    by_option = cli(*args, "--simulate", "never", env={**no_keys, "COUNCIL_SIMULATE": "always"})
    for done in (by_variable, by_option):
        # Then it exits 2 with one line naming each profile it would simulate and why
        assert done.code == 2, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert "simulation refused (never)" in line
        assert "claude (ANTHROPIC_API_KEY is unset" in line and "glm (ZAI_API_KEY is unset" in line
        assert "codex" not in line
    # And nothing was written
    assert _rows(engine) == before


def test_dispatch_says_which_agents_are_simulated_and_pins_them(
    engine: Engine, cli: CliRunner, redis_url: str
) -> None:
    ledger = Ledger.new(engine)
    env = {
        "COUNCIL_BROKER_URL": redis_url,
        "ANTHROPIC_API_KEY": "",
        "OPENAI_API_KEY": "sk-x",
        "ZAI_API_KEY": "",
    }
    args = ("dispatch", "--thread", str(ledger.thread_id), "--agents", "claude,codex")
    shown = cli(*args, env=env)
    assert shown.code == 0, shown.stderr
    assert "simulated claude: council-sim/claude (ANTHROPIC_API_KEY is unset" in shown.stdout
    assert "real codex: openai/gpt-5.5 (OPENAI_API_KEY is set)" in shown.stdout
    done = cli(*args, "--json", env=env).json()
    assert done["simulated"] == ["claude"] and done["simulation"] == "auto"
    assert done["executors"]["codex"] == {
        "model": "openai/gpt-5.5", "provider": "openai", "simulated": False, "why": "OPENAI_API_KEY is set",
    }  # fmt: skip
    pinned = {row["agent"]: row for row in (_run(engine, UUID(r)) for r in done["run_ids"])}
    assert pinned["codex"]["executor"]["model"] == "openai/gpt-5.5"
    assert "sk-x" not in json.dumps(pinned["codex"]["executor"])


def test_profiles_lists_each_profile_as_it_would_run_here(cli: CliRunner, tmp_path: Path) -> None:
    _profiles_file(tmp_path, "http://127.0.0.1:9/v1")
    env = {"ANTHROPIC_API_KEY": "sk-ant-set-0123456789", "OPENAI_API_KEY": "", "ZAI_API_KEY": ""}
    listed = cli("profiles", "--json", env=env)
    assert listed.code == 0, listed.stderr
    data = listed.json()
    by_name = {p["name"]: p for p in data["profiles"]}
    assert data["simulation"] == "auto"
    assert sorted(by_name) == ["claude", "cli", "codex", "fake", "glm", "local"]
    claude, codex, local = by_name["claude"], by_name["codex"], by_name["local"]
    assert (claude["model"], claude["runs_as"], claude["simulated"], claude["key_set"], claude["why"]) == (
        "anthropic/claude-sonnet-4-6", "anthropic/claude-sonnet-4-6", False, True, "ANTHROPIC_API_KEY is set",
    )  # fmt: skip
    assert (codex["runs_as"], codex["simulated"], codex["why"]) == (
        "council-sim/codex", True, "OPENAI_API_KEY is unset",
    )  # fmt: skip
    assert (local["api_base"], local["api_key_env"], local["key_set"], local["simulated"]) == (
        "http://127.0.0.1:9/v1", "", None, False,
    )  # fmt: skip
    assert (by_name["cli"]["runtime"], by_name["cli"]["provider"]) == ("codex-cli", "openai")
    assert "sk-ant-set" not in listed.stdout
    always = cli("profiles", "--simulate", "always", "--json", env=env).json()
    assert all(p["simulated"] and p["why"] == "simulation mode always" for p in always["profiles"])
    human = cli("profiles", env=env)
    assert human.code == 0 and "simulated" in human.stdout and "ANTHROPIC_API_KEY is set" in human.stdout


def test_run_show_says_what_ran_and_who_ran_each_attempt(
    engine: Engine, uow: UnitOfWork, cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COUNCIL_SIMULATE", "always")
    ledger = Ledger.new(engine)
    ledger.node()
    run_id = _one_run(uow, ledger.thread_id, "claude")
    assert execute_run(uow, Recorder(), run_id, owner="runs@test-host:42").status == "succeeded"
    shown = cli("run", "show", str(run_id), "--json")
    assert shown.code == 0, shown.stderr
    data = shown.json()
    assert (data["simulated"], data["runtime"], data["model"]) == (True, "litellm", "council-sim/claude")
    assert data["executor"]["profile"] == "claude" and data["executor"]["why"] == "simulation mode always"
    (attempt,) = data["attempts"]
    assert (attempt["attempt"], attempt["worker"], attempt["status"]) == (1, "runs@test-host:42", "succeeded")
    human = cli("run", "show", str(run_id))
    assert "runs@test-host:42" in human.stdout and "simulated" in human.stdout


def test_run_record_normalises_the_provider_family(engine: Engine, cli: CliRunner) -> None:
    ledger = Ledger.new(engine)
    base = ("run", "record", "--thread", str(ledger.thread_id), "--json")
    routed = cli(
        *base, "--agent", "glm", "--model", "openrouter/z-ai/glm-5.1", "--provider", "openrouter"
    ).json()
    direct = cli(*base, "--agent", "glm2", "--model", "zai/glm-5.1").json()
    alias = cli(*base, "--agent", "glm3", "--model", "house/glm", "--provider", "Z-AI").json()
    assert routed["provider"] == direct["provider"] == alias["provider"] == "zhipu"
