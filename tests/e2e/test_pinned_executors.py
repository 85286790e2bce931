"""What ran is what the run says ran, on real Celery workers, Redis and Postgres
(docs/architecture.md §7): the executor is pinned where the run is dispatched, and each
worker runs exactly that or fails the run with its reason; one retry level.

A local fake OpenAI-compatible server stands in for a real endpoint (a profile
with its own ``api_base`` on 127.0.0.1 and its own key variable) and records
every request it is sent, with its ``Authorization`` header.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from council.domain.agent_output import AgentOutput, ClaimOut
from tests.builders import Ledger
from tests.e2e.conftest import Workers, council, rows
from tests.fakes.openai_server import fake_openai, reply, server_error, unauthorized
from tests.processes import stop_groups

KEY_VAR = "COUNCIL_E2E_FAKE_KEY"
CLI_KEY = "sk-the-dispatchers-key-0123456789"
WORKER_KEY = "sk-the-workers-key-0123456789abc"
WORKER_OPENAI_KEY = "sk-the-workers-openai-key-0123456"
PROFILE = '[profiles.{name}]\nmodel = "openai/fake-model"\napi_key_env = "{key_var}"\napi_base = "{url}"\n'


def _profiles(path: Path, **urls: str) -> Path:
    path.write_text("\n".join(PROFILE.format(name=n, key_var=KEY_VAR, url=u) for n, u in urls.items()))
    return path


def _answer(version_id: Any) -> str:
    return AgentOutput(
        summary="[fake] one endorsement.", claims=[ClaimOut(node_version_id=str(version_id), type="endorse")]
    ).model_dump_json()


def _dispatch(env: dict[str, str], thread_id: Any, agents: str) -> dict[str, Any]:
    done = council(
        env,
        "dispatch",
        "--thread",
        str(thread_id),
        "--agents",
        agents,
        "--wait",
        "--timeout",
        "240",
        "--json",
    )
    result: dict[str, Any] = json.loads(done.stdout)
    # Exit 0 when every run succeeded, 1 when any failed (docs/reference/formats.md), the document either way
    assert done.returncode == (1 if result["failed"] else 0), done.stderr
    return result


def _run(engine: Engine, run_id: str) -> Any:
    (row,) = rows(
        engine, "SELECT model, simulated, status, error, usage FROM agent_runs WHERE id = :i", i=run_id
    )
    return row


def _attempts(engine: Engine, run_id: str) -> list[Any]:
    return rows(
        engine,
        "SELECT attempt, event, worker, status, reason FROM run_attempts WHERE run_id = :i "
        "ORDER BY attempt, event",
        i=run_id,
    )


def _stop(worker: subprocess.Popen[bytes]) -> None:
    stop_groups([worker], grace_s=20)


def test_every_combination_of_key_on_the_dispatcher_and_key_on_the_worker(
    engine: Engine, workers: Workers, worker_env: dict[str, str], tmp_path: Path
) -> None:
    ledger = Ledger.new(engine)
    version = ledger.node()["version_id"]
    with (
        fake_openai([reply(_answer(version))]) as (url, endpoint),
        fake_openai([reply("no")]) as (other, decoy),
    ):
        # Given the dispatcher's profile `fake` on the fake endpoint, and workers whose own profiles
        # file points `fake` elsewhere and whose COUNCIL_SIMULATE says the opposite of what runs
        base = {k: v for k, v in worker_env.items() if k != "COUNCIL_SIMULATE"}
        cli = {**base, "COUNCIL_PROFILES": str(_profiles(tmp_path / "cli.toml", fake=url))}
        on_workers = {
            "COUNCIL_PROFILES": str(_profiles(tmp_path / "worker.toml", fake=other)),
            "OPENAI_API_KEY": WORKER_OPENAI_KEY,
        }
        with_key, without_key = {**cli, KEY_VAR: CLI_KEY}, {**cli, KEY_VAR: ""}
        seen: dict[str, tuple[dict[str, Any], str]] = {}  # case -> (run, worker it ran on)

        # When a worker that has the key runs a run dispatched with the key and one dispatched without
        keyed = workers(
            "--queues", "runs", "--name", "keyed@%h",
            env={**on_workers, KEY_VAR: WORKER_KEY, "COUNCIL_SIMULATE": "always"},
        )  # fmt: skip
        seen["key here, key there"] = (_dispatch(with_key, ledger.thread_id, "fake")["runs"][0], "keyed@")
        seen["no key here, key there"] = (
            _dispatch(without_key, ledger.thread_id, "fake")["runs"][0],
            "keyed@",
        )
        _stop(keyed)
        # And a worker without the key runs the same two kinds of run
        keyless = workers(
            "--queues", "runs", "--name", "keyless@%h", env={**on_workers, "COUNCIL_SIMULATE": "never"}
        )
        seen["key here, no key there"] = (
            _dispatch(with_key, ledger.thread_id, "fake")["runs"][0],
            "keyless@",
        )
        seen["no key here, no key there"] = (
            _dispatch(without_key, ledger.thread_id, "fake")["runs"][0],
            "keyless@",
        )
        _stop(keyless)

    # Then only the run pinned real on the keyed worker reached the endpoint, with the worker's key
    assert len(endpoint.requests) == 1 and decoy.requests == []
    assert endpoint.requests[0]["headers"]["authorization"] == f"Bearer {WORKER_KEY}"
    assert WORKER_OPENAI_KEY not in json.dumps(endpoint.requests)
    expected = {  # case -> (model, simulated, status)
        "key here, key there": ("openai/fake-model", False, "succeeded"),
        "no key here, key there": ("council-sim/fake", True, "succeeded"),
        "key here, no key there": ("openai/fake-model", False, "failed"),
        "no key here, no key there": ("council-sim/fake", True, "succeeded"),
    }
    for case, (shown, worker_prefix) in seen.items():
        run = _run(engine, shown["id"])
        # And the ledger's model and simulated flag are what was called (or, failed, what was pinned)
        assert (run.model, run.simulated, run.status) == expected[case], case
        assert shown["simulated"] is run.simulated, case
        if run.status == "succeeded":
            assert run.usage["simulated"] is run.simulated, case
        # And each attempt names the worker that ran it, kept after the run ended
        attempts = _attempts(engine, shown["id"])
        assert [(a.attempt, a.event) for a in attempts] == [(1, "claimed"), (1, "ended")], case
        assert all(a.worker.startswith(worker_prefix) for a in attempts), (case, attempts)
        assert attempts[1].status == run.status, case
    # And the real-pinned run on the keyless worker failed naming the variable and the worker, never simulated
    failed = _run(engine, seen["key here, no key there"][0]["id"])
    worker = _attempts(engine, seen["key here, no key there"][0]["id"])[0].worker
    assert re.fullmatch(r"keyless@\S+:\d+", worker)
    assert failed.error == f"worker {worker} has no {KEY_VAR} for the real profile fake (openai/fake-model)"


def test_one_retry_level_a_500_is_asked_max_retries_plus_one_times_and_a_401_once(
    engine: Engine, workers: Workers, worker_env: dict[str, str], tmp_path: Path
) -> None:
    ledger = Ledger.new(engine)
    ledger.node()
    with (
        fake_openai([server_error()]) as (down_url, down),
        fake_openai([unauthorized()]) as (denied_url, denied),
    ):
        # Given a profile whose endpoint always answers 500 and one whose endpoint refuses the key,
        # and a worker whose retry policy allows 2 retries, quickly
        profiles = str(_profiles(tmp_path / "profiles.toml", down=down_url, denied=denied_url))
        env = {**worker_env, "COUNCIL_PROFILES": profiles, "COUNCIL_SIMULATE": "never", KEY_VAR: WORKER_KEY}
        retry = {"COUNCIL_RETRY_MAX": "2", "COUNCIL_RETRY_BASE_S": "0.05", "COUNCIL_RETRY_CAP_S": "0.2"}
        workers("--queues", "runs", "--name", "runs@%h", env={**env, **retry})
        # When both are dispatched
        result = _dispatch(env, ledger.thread_id, "down,denied")
    runs = {r["agent"]: r for r in result["runs"]}
    # Then the 500 was asked exactly max_retries + 1 times, one attempt per try, and the run failed with why
    assert len(down.requests) == 3
    stored = _run(engine, runs["down"]["id"])
    assert stored.status == "failed"
    assert (
        stored.error.startswith("no answer after 3 tries: openai/fake-model: ") and "HTTP 500" in stored.error
    )
    ended = [(a.attempt, a.status) for a in _attempts(engine, runs["down"]["id"]) if a.event == "ended"]
    assert ended == [(1, "released"), (2, "released"), (3, "failed")]
    # And the 401 was asked once: permanent, never retried, and the key is not in the reason
    assert len(denied.requests) == 1
    refused = _run(engine, runs["denied"]["id"])
    assert refused.status == "failed" and "authentication" in refused.error.lower()
    assert WORKER_KEY not in refused.error
    assert [(a.attempt, a.status) for a in _attempts(engine, runs["denied"]["id"]) if a.event == "ended"] == [
        (1, "failed")
    ]
