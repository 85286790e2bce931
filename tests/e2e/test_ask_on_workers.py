"""`council ask` end to end (issue 35): real Postgres, Redis and Celery workers; three API
models as local fake servers (OpenAI chat, Anthropic Messages, and a careless one that
cites what it never read and so fails). Two rounds (the blind one and one deliberative):
the proposition consolidates on the two readers' blind endorsements, the careless agent's
failure is named with its reason, ask exits 1, and its cost totals are the runs' usage as
the ledger recorded it."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import Engine

from tests.builders import Ledger
from tests.e2e.conftest import Workers, council, rows
from tests.fakes.chat_model import chat_model, messages_model

NO_KEYS = {name: "" for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZAI_API_KEY", "OPENROUTER_API_KEY")}
PROFILE = '[profiles.{name}]\nmodel = "{model}"\napi_key_env = ""\napi_base = "{url}"\n'


def test_ask_runs_two_rounds_consolidates_names_the_failure_and_totals_the_cost(
    engine: Engine, workers: Workers, worker_env: dict[str, str], tmp_path: Path
) -> None:
    # Given a thread with evidence and a proposition citing it
    ledger = Ledger.new(engine, evidence_items=3)
    node = ledger.node("The replica keeps up under load", cites=list(ledger.evidence[:2]))
    version = str(node["version_id"])
    with (
        chat_model(endorse=True) as (chat, _),
        messages_model(endorse=True) as (messages, _),
        chat_model(endorse=True, cites_unread=True) as (careless, _),
    ):
        profiles = tmp_path / "profiles.toml"
        profiles.write_text(
            "\n".join(
                (
                    PROFILE.format(name="alpha", model="openai/alpha-model", url=chat),
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
        # (all three of a round briefed at once, before any answer lands and the node consolidates)
        workers("--queues", "runs", "--pool", "threads", "--concurrency", "4", env=env)
        workers("--queues", "commit,maintenance", env=env)
        # When a person asks the council on that thread, two rounds
        question = "Does the replica keep up under load?"
        asked = council(
            env, "ask", question, "--thread", str(ledger.thread_id), "--agents", "alpha,beta,omega",
            "--rounds", "1", "--timeout", "240", "--json",
        )  # fmt: skip
        human = council(
            env, "dispatch", "show", json.loads(asked.stdout)["dispatch_id"][:8]
        )  # the same dispatch, read back for a person
    # Then ask exits 1 and names the failure with its reason
    assert asked.returncode == 1, asked.stderr
    doc = json.loads(asked.stdout)
    assert doc["rounds"] == 2 and sorted(doc["agents"]) == ["alpha", "beta", "omega"]
    # (its round-2 run fails too when briefed before the node consolidated; after, nothing is
    # left to cite and it answers)
    assert doc["failed"] in (1, 2) and doc["answered"] == 2
    assert {f["agent"] for f in doc["failures"]} == {"omega"}
    assert all("did not read" in (f["error"] or "") for f in doc["failures"])
    assert f"{doc['failed']} run(s) failed: 2 of 3 agents answered" in asked.stderr
    assert "omega failed" in human.stdout
    # And the proposition consolidated, on the two readers' independent blind endorsements
    [prop] = [p for p in doc["propositions"] if p["version_id"] == version]
    assert prop["consolidated"] and prop["consolidation_id"], prop["why"]
    assert prop["why"].startswith("consolidated: ")
    assert {a for g in prop["groups"] if g["kind"] == "support" for a in g["agents"]} == {"alpha", "beta"}
    assert {s["agent"] for s in prop["stances"]} == {"alpha", "beta"}
    assert doc["settled"] is True and doc["contested"] == []
    # And the cost is the runs' recorded usage, summed
    used = rows(
        engine,
        "SELECT coalesce(sum((usage->>'prompt_tokens')::int), 0) AS p, "
        "coalesce(sum((usage->>'completion_tokens')::int), 0) AS c FROM agent_runs WHERE dispatch_id = :d",
        d=doc["dispatch_id"],
    )[0]
    assert used.p > 0 and (doc["cost"]["prompt_tokens"], doc["cost"]["completion_tokens"]) == (used.p, used.c)
