"""A council of API models reads what it cites, end to end (issue 29, docs/architecture.md §7): real
Postgres, Redis and Celery workers; the models are local fake servers speaking the OpenAI
chat API and the Anthropic Messages API, through litellm's openai/, zai/ and anthropic/
providers. None of the thread's five evidence items is given inline: three agents read
two through the ``read_evidence`` tool and cite them; a fourth cites an item it never
opened, is re-prompted, and fails with that reason. `dispatch --wait` exits 1 and prints
the failure; `run show` gives each answer and what each run opened; the node
consolidates on the supports whose evidence was read, and on nothing else."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import Engine

from tests.builders import Ledger
from tests.e2e.conftest import Workers, council, rows, wait_for
from tests.fakes.chat_model import chat_model, messages_model

NO_KEYS = {name: "" for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZAI_API_KEY", "OPENROUTER_API_KEY")}
PROFILE = '[profiles.{name}]\nmodel = "{model}"\napi_key_env = ""\napi_base = "{url}"\n'


def test_api_agents_cite_only_what_they_read_and_the_careless_one_fails_loudly(
    engine: Engine, workers: Workers, worker_env: dict[str, str], tmp_path: Path
) -> None:
    # Given a thread with five evidence items and a node citing two of them
    ledger = Ledger.new(engine, evidence_items=5)
    node = ledger.node("The replica keeps up under load", cites=list(ledger.evidence[:2]))
    version = str(node["version_id"])
    thread = str(ledger.thread_id)
    with (
        chat_model(endorse=True) as (chat, chat_seen),
        messages_model(endorse=True) as (messages, messages_seen),
        chat_model(endorse=True, cites_unread=True) as (careless, careless_seen),
    ):
        # And four real profiles: OpenAI-, Z.ai- and Anthropic-style readers, and a careless model
        profiles = tmp_path / "profiles.toml"
        profiles.write_text(
            "\n".join(
                (
                    PROFILE.format(name="alpha", model="openai/alpha-model", url=chat),
                    PROFILE.format(name="zeta", model="zai/glm-fake", url=chat),
                    PROFILE.format(name="beta", model="anthropic/claude-fake", url=messages),
                    PROFILE.format(name="omega", model="openai/omega-model", url=careless),
                )
            )
        )
        env = {
            **worker_env,
            **NO_KEYS,
            "COUNCIL_PROFILES": str(profiles),
            "COUNCIL_SIMULATE": "never",
            "COUNCIL_INLINE_EVIDENCE_TOKENS": "0",
        }
        # (the committer starts once every run is over: a run claimed after the node consolidated
        # would be briefed on a frontier without it)
        workers("--queues", "runs", env=env)
        # When the four are dispatched and waited for
        done = council(
            env, "dispatch", "--thread", thread, "--agents", "alpha,zeta,beta,omega", "--wait",
            "--timeout", "180", "--json",
        )  # fmt: skip
        # Then dispatch exits 1, and says which failed and why
        assert done.returncode == 1, done.stderr
        doc = json.loads(done.stdout)
        assert (doc["failed"], doc["answered"]) == (1, 3)
        by_agent = {r["agent"]: r for r in doc["runs"]}
        assert by_agent["omega"]["status"] == "failed"
        assert "did not read" in by_agent["omega"]["error"]
        assert all(by_agent[a]["status"] == "succeeded" for a in ("alpha", "zeta", "beta"))
        assert "1 run(s) failed: 3 of 4 agents answered" in done.stderr
        human = council(env, "run", "show", by_agent["omega"]["id"])
        assert "did not read" in human.stdout
        # And the careless model was re-prompted once, naming the item, and never called the tool
        careless_calls = careless_seen.model_calls()
        assert len(careless_calls) == 2
        assert "did not read" in careless_calls[1]["json"]["messages"][-1]["content"]
        # And each reader called the tool before answering: OpenAI tool_calls, Anthropic tool_use
        assert any(m.get("role") == "tool" for m in chat_seen.model_calls()[-1]["json"]["messages"])
        assert any(
            b.get("type") == "tool_result"
            for m in messages_seen.model_calls()[-1]["json"]["messages"]
            for b in m["content"]
            if isinstance(b, dict)
        )

        # And run show gives each reader's answer and what it opened: read through the tool, cited
        for agent in ("alpha", "zeta", "beta"):
            shown = council(env, "run", "show", by_agent[agent]["id"], "--json")
            assert shown.returncode == 0, shown.stderr
            run = json.loads(shown.stdout)
            assert "endorses what the evidence it read supports" in run["answer"]["text"]
            cited = {o["evidence_id"] for o in run["opened_evidence"] if o["cited"]}
            assert cited and all(o["opened"] for o in run["opened_evidence"] if o["cited"])
        omega = json.loads(council(env, "run", "show", by_agent["omega"]["id"], "--json").stdout)
        assert omega["answer"] and not [o for o in omega["opened_evidence"] if o["opened"]]

        # And the node consolidates, on the readers' supports and nothing of the careless run
        workers("--queues", "commit,maintenance", env=env)
        wait_for(
            lambda: bool(rows(engine, "SELECT 1 FROM memory_items WHERE node_version_id = :v", v=version)),
            120,
            "the node to consolidate",
        )
    readers = {by_agent[a]["id"] for a in ("alpha", "zeta", "beta")}
    claims = rows(engine, "SELECT run_id FROM claims WHERE node_version_id = :v", v=version)
    assert {str(c.run_id) for c in claims if c.run_id is not None} == readers
    unread = rows(
        engine,
        "SELECT run_id, evidence_id FROM council_v_opened_evidence "
        "WHERE cited AND NOT opened AND run_id = ANY(:r)",
        r=list(readers),
    )
    assert unread == []
