"""What an `ask` reserves and spends, and a dead agent, on real workers (issue 45): real
Postgres, Redis and Celery workers; the models are local fake OpenAI-compatible servers
serving priced model names (litellm's price map prices them), each reporting the tokens a
provider would bill. The reservation, taken before any run is sent, stays within three
times what the nine runs of a three-round ask were billed, and `ask --json` reports both.
An agent whose endpoint refuses connections fails its first round on the retry policy's
short schedule and is skipped in the later rounds, each skipped run naming the round it
failed in. (The time such an ask takes against the same ask without the dead agent is a
benchmark, `python -m benchmarks dead-agent`: timing in a test on a shared machine is flaky.)"""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

from tests.conftest import free_port
from tests.e2e.conftest import Workers, council
from tests.fakes.chat_model import chat_model

NO_KEYS = {name: "" for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZAI_API_KEY", "OPENROUTER_API_KEY")}
# Three priced models (litellm's local price map), each stating how long its answers are
PRICED = {"mini": "openai/gpt-4o-mini", "nano": "openai/gpt-4.1-nano", "four": "openai/gpt-4.1-mini"}
PROFILE = (
    '[profiles.{name}]\nmodel = "{model}"\napi_key_env = ""\napi_base = "{url}"\n'
    "expected_output_tokens = 400\nparams = {{max_tokens = 2000}}\n"
)
QUESTION = "Does the replica keep up under load?"


def _env(worker_env: dict[str, str], tmp_path: Path, urls: dict[str, str]) -> dict[str, str]:
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(
        "\n".join(
            PROFILE.format(name=n, model=PRICED.get(n, "openai/gpt-4o-mini"), url=u) for n, u in urls.items()
        )
    )
    return {**worker_env, **NO_KEYS, "COUNCIL_PROFILES": str(profiles), "COUNCIL_SIMULATE": "never"}


def test_an_asks_reservation_is_within_three_times_what_its_nine_runs_were_billed(
    workers: Workers, worker_env: dict[str, str], tmp_path: Path
) -> None:
    # Given three priced models that report the tokens they are sent and answer
    with ExitStack() as stack:
        urls = {name: stack.enter_context(chat_model(counted=True))[0] for name in PRICED}
        env = _env(worker_env, tmp_path, urls)
        workers("--queues", "runs", "--pool", "threads", "--concurrency", "3", env=env)
        workers("--queues", "commit,maintenance", env=env)
        # When a person asks them, three rounds, under a budget
        asked = council(
            env, "ask", QUESTION, "--agents", ",".join(PRICED), "--rounds", "1", "--budget-usd", "1",
            "--timeout", "240", "--json",
        )  # fmt: skip
    # Then the nine runs answered, and ask reports what was reserved beside what was billed
    assert asked.returncode == 0, asked.stderr
    doc = json.loads(asked.stdout)
    assert len(doc["runs"]) == 9 and doc["failed"] == 0
    reserved, billed = doc["reservation"]["usd"], doc["cost"]["usd"]
    assert billed > 0 and doc["cost"]["unpriced"] == 0
    # And the reservation is the request's own size: within three times the spend
    assert billed <= reserved <= 3 * billed, (reserved, billed, doc["reservation"]["agents"], doc["cost"])
    # And each agent's estimate says what it was made of: its prompt's tokens and its expected answer
    for agent in doc["reservation"]["agents"]:
        assert agent["runs"] == 3 and agent["max_output_tokens"] == 400 and agent["prompt_tokens"] > 0


def test_an_agent_whose_endpoint_refuses_connections_is_skipped_after_its_first_round(
    workers: Workers, worker_env: dict[str, str], tmp_path: Path
) -> None:
    # Given two answering models and a third profile whose port has nothing listening
    port = free_port()
    with ExitStack() as stack:
        urls = {name: stack.enter_context(chat_model(counted=True))[0] for name in ("mini", "nano")}
        env = _env(worker_env, tmp_path, {**urls, "dead": f"http://127.0.0.1:{port}/v1"})
        workers("--queues", "runs", "--pool", "threads", "--concurrency", "3", env=env)
        workers("--queues", "commit,maintenance", env=env)
        # When a person asks the three of them, three rounds
        asked = council(
            env, "ask", QUESTION, "--agents", "mini,nano,dead", "--rounds", "1", "--timeout", "240", "--json"
        )
    # Then ask exits 1: two of three agents answered
    assert asked.returncode == 1, asked.stderr
    doc = json.loads(asked.stdout)
    assert doc["answered"] == 2 and doc["failed"] == 3
    assert "3 run(s) failed: 2 of 3 agents answered" in asked.stderr
    # And the dead agent's first run failed naming the endpoint, never a key
    failures = {f["round"]: f["error"] for f in doc["failures"]}
    assert {f["agent"] for f in doc["failures"]} == {"dead"} and sorted(failures) == [1, 2, 3]
    first = failures[1]
    assert first.startswith("no answer after 5 tries: openai/gpt-4o-mini: ")
    assert first.endswith(f"cannot connect to 127.0.0.1:{port}: connection refused")
    # And its later rounds were skipped at once, naming the round it failed in
    assert failures[2] == failures[3] == f"skipped: dead failed in round 1: {first}"
