"""A failed council is loud (issue 29 part 3; docs/reference/formats.md, exit codes): `dispatch --wait` prints
each failed run with its reason and "k of n agents answered", and exits 1 when any run failed,
0 when every run succeeded; its JSON carries `failed`, `answered` and `cost`. Real workers,
Redis and Postgres; a real profile fails on a worker that lacks its key."""

from __future__ import annotations

import json

from sqlalchemy import Engine

from tests.builders import Ledger
from tests.e2e.conftest import Workers, council

KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZAI_API_KEY", "OPENROUTER_API_KEY")


def _dispatch(env: dict[str, str], thread: str, *extra: str) -> tuple[int, str, str]:
    done = council(
        env,
        "dispatch",
        "--thread",
        thread,
        "--agents",
        "claude,codex,glm",
        "--wait",
        "--timeout",
        "180",
        *extra,
    )
    return done.returncode, done.stdout, done.stderr


def test_dispatch_wait_exits_1_with_each_reason_when_runs_fail(
    engine: Engine, workers: Workers, worker_env: dict[str, str]
) -> None:
    # Given a thread, and workers that hold no provider key
    ledger = Ledger.new(engine, evidence_items=1)
    ledger.node("The replica keeps up under load", cites=[ledger.evidence[0]])
    bare = {k: v for k, v in worker_env.items() if k not in KEYS}
    workers("--queues", "runs,commit,maintenance", env={k: "" for k in KEYS})
    thread = str(ledger.thread_id)

    # When the three agents are dispatched as real models (the keys are set where the
    # dispatch is made, not on the workers)
    keyed = {**bare, **{k: f"sk-test-{k.lower()}" for k in KEYS}}
    code, out, err = _dispatch(keyed, thread, "--simulate", "never", "--json")
    # Then it exits 1, one JSON document says three failed, none answered, and why
    assert code == 1, err
    doc = json.loads(out)
    assert (doc["failed"], doc["answered"], doc["complete"]) == (3, 0, True)
    assert all(r["status"] == "failed" and "has no" in r["error"] for r in doc["runs"])
    assert doc["cost"] == {"usd": 0.0, "prompt_tokens": 0, "completion_tokens": 0, "unpriced": 0}
    assert err.strip().splitlines()[-1] == "3 run(s) failed: 0 of 3 agents answered"

    # When only claude is real (its key set), codex and glm simulated, in human form
    half = {**bare, "ANTHROPIC_API_KEY": "sk-test-anthropic"}
    code, out, err = _dispatch(half, thread, "--simulate", "auto")
    # Then it exits 1 and prints claude's failure with its reason, and 2 of 3 answered
    assert code == 1, err
    assert "failed: claude round 1" in out and "has no ANTHROPIC_API_KEY" in out
    assert "2 of 3 agents answered" in out

    # When every profile is simulated, every run succeeds: exit 0
    code, out, err = _dispatch(bare, thread, "--simulate", "always", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["failed"], doc["answered"]) == (0, 3)
    assert doc["cost"]["prompt_tokens"] > 0 and doc["cost"]["usd"] == 0.0
