"""`council ask` end to end (issues 35, 43): real Postgres, Redis and Celery workers; API
models as local fake servers of three providers (OpenAI chat, Anthropic Messages, and GLM on
an OpenAI-compatible endpoint).

With models that think for themselves (``tests.fakes.minded_model``: each holds a verdict with
a confidence, words its own proposition in its own style and judges what it is shown by
reading it), the council protocol establishes the answer they share through the blind
cross-review, and a confident independent dissent keeps it honestly open. With reading
models and a careless one, the failure is named with its reason, ask exits 1, and the cost
totals are the runs' usage as the ledger recorded it."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from sqlalchemy import Engine

from tests.builders import Ledger
from tests.e2e.conftest import Workers, council, rows
from tests.fakes.chat_model import chat_model, messages_model
from tests.fakes.minded_model import Mind, read_verdict

NO_KEYS = {name: "" for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZAI_API_KEY", "OPENROUTER_API_KEY")}
PROFILE = '[profiles.{name}]\nmodel = "{model}"\napi_key_env = ""\napi_base = "{url}"\n'
QUESTION = "Does the replica keep up under the production write load?"
EVIDENCE = (
    "Replica load test, 2026-11-30: at the production peak of 4,000 writes/s the replica's lag stayed "
    "under 40 ms for the whole hour, and never exceeded 120 ms at twice that rate."
)
# Three providers' models: (profile, model, served as)
COUNCIL = (("alpha", "openai/alpha-model", "chat"), ("beta", "anthropic/claude-fake", "messages"),
           ("gamma", "openai/glm-4.6-fake", "chat"))  # fmt: skip


@contextmanager
def minded_council(tmp_path: Path, minds: Sequence[Mind]) -> Iterator[Path]:
    """A profiles file naming the three models, each served by a fake server of its provider
    with the mind it is given."""
    with ExitStack() as stack:
        lines = []
        for (name, model, served), mind in zip(COUNCIL, minds, strict=True):
            serve = chat_model if served == "chat" else messages_model
            url, _ = stack.enter_context(serve(mind=mind))
            lines.append(PROFILE.format(name=name, model=model, url=url))
        profiles = tmp_path / "profiles.toml"
        profiles.write_text("\n".join(lines))
        yield profiles


def ask_the_council(
    tmp_path: Path, workers: Workers, worker_env: dict[str, str], minds: Sequence[Mind]
) -> tuple[int, dict[str, object], str]:
    """`council ask` on a fresh question with evidence from a file, on the workers: (exit code,
    its JSON document, its stderr)."""
    evidence = tmp_path / "replica-load-test.txt"
    evidence.write_text(EVIDENCE, encoding="utf-8")
    with minded_council(tmp_path, minds) as profiles:
        env = {**worker_env, **NO_KEYS, "COUNCIL_PROFILES": str(profiles), "COUNCIL_SIMULATE": "never"}
        workers("--queues", "runs", "--pool", "threads", "--concurrency", "4", env=env)
        workers("--queues", "commit,maintenance", env=env)
        asked = council(
            env, "ask", QUESTION, "--evidence", str(evidence), "--agents", "alpha,beta,gamma",
            "--rounds", "1", "--timeout", "240", "--json", timeout=300,
        )  # fmt: skip
    return asked.returncode, json.loads(asked.stdout), asked.stderr


def test_three_models_that_agree_establish_their_answer_through_the_blind_cross_review(
    engine: Engine, workers: Workers, worker_env: dict[str, str], tmp_path: Path
) -> None:
    # Given three models of three providers that each hold "yes", each in its own words
    minds = [Mind("yes", 0.9, 0), Mind("yes", 0.85, 1), Mind("yes", 0.8, 2)]
    # When a person asks the council a fresh question, with evidence from a file
    code, doc, stderr = ask_the_council(tmp_path, workers, worker_env, minds)
    # Then ask exits 0 and leads with an established answer that states that verdict
    assert code == 0, stderr
    answer = doc["answer"]
    assert isinstance(answer, dict) and answer["established"] is True, answer
    assert read_verdict(answer["content"]) == "yes"
    # And it consolidated on independent support groups of different agents' blind runs
    groups = answer["support_groups"]
    assert len(groups) >= 2 and len({a for g in groups for a in g["agents"]}) == len(groups)
    # And each model proposed in its own words: three propositions, three texts, each also
    # established (the same answer in other words), listed beside the answer
    propositions = doc["propositions"]
    assert isinstance(propositions, list) and len({p["content"] for p in propositions}) == 3
    assert all(p["consolidated"] for p in propositions)
    assert [a["consolidated"] for a in answer["alternatives"]] == [True, True]
    # And each agent's own summary, in its words, follows the answer
    assert [s["agent"] for s in doc["summaries"]] == ["alpha", "beta", "gamma"]  # type: ignore[union-attr]
    # And the evidence reached every run: its text is in each stored request
    requests = rows(
        engine, "SELECT request::text AS r FROM agent_runs WHERE dispatch_id = :d", d=doc["dispatch_id"]
    )
    assert len(requests) == 9 and all(EVIDENCE in r.r for r in requests)


def test_a_confident_independent_dissent_keeps_the_question_open_and_both_answers_remain(
    engine: Engine, workers: Workers, worker_env: dict[str, str], tmp_path: Path
) -> None:
    # Given two models that hold "yes" and a third that holds "no", confidently (0.7)
    minds = [Mind("yes", 0.9, 0), Mind("yes", 0.85, 1), Mind("no", 0.7, 2)]
    # When a person asks the council, with the evidence
    code, doc, stderr = ask_the_council(tmp_path, workers, worker_env, minds)
    # Then ask exits 0, and the council established nothing: the minority's confident, independent
    # dispute blocks the majority's propositions under the default rules, and the majority
    # disputes the minority's
    assert code == 0, stderr
    answer = doc["answer"]
    assert isinstance(answer, dict) and answer["established"] is False and answer["version_id"] is None
    propositions = doc["propositions"]
    assert isinstance(propositions, list) and not any(p["consolidated"] for p in propositions)
    # And both verdicts' propositions remain, listed as alternatives with their independent
    # support and the disputes that hold them open
    alternatives = {read_verdict(a["content"]): a for a in answer["alternatives"]}
    assert len(answer["alternatives"]) == 3 and set(alternatives) == {"yes", "no"}
    assert alternatives["yes"]["support"] == 2 and alternatives["yes"]["disputes"] == 1
    assert alternatives["no"]["support"] == 1 and alternatives["no"]["disputes"] >= 1
    minority = [p for p in propositions if read_verdict(p["content"]) == "no"]
    assert len(minority) == 1 and not minority[0]["consolidated"]
    live = rows(engine, "SELECT count(*) AS n FROM consolidations WHERE thread_id = :t AND status = 'live'",
                t=doc["thread_id"])  # fmt: skip
    assert live[0].n == 0


def test_ask_names_the_failure_and_totals_the_cost(
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
        workers("--queues", "runs", "--pool", "threads", "--concurrency", "4", env=env)
        workers("--queues", "commit,maintenance", env=env)
        # When a person asks the council on that thread: its proposing and cross-review rounds
        question = "Does the replica keep up under load?"
        asked = council(
            env, "ask", question, "--thread", str(ledger.thread_id), "--agents", "alpha,beta,omega",
            "--rounds", "0", "--timeout", "240", "--json",
        )  # fmt: skip
        human = council(
            env, "dispatch", "show", json.loads(asked.stdout)["dispatch_id"][:8]
        )  # the same dispatch, read back for a person
    # Then ask exits 1 and names the failure with its reason
    assert asked.returncode == 1, asked.stderr
    doc = json.loads(asked.stdout)
    assert doc["rounds"] == 2 and sorted(doc["agents"]) == ["alpha", "beta", "omega"]
    assert doc["failed"] == 2 and doc["answered"] == 2  # the careless agent failed both its rounds
    assert {f["agent"] for f in doc["failures"]} == {"omega"}
    assert all("did not read" in (f["error"] or "") for f in doc["failures"])
    assert f"{doc['failed']} run(s) failed: 2 of 3 agents answered" in asked.stderr
    assert "omega failed" in human.stdout
    # And the question was recorded on the thread, and every briefing of the ask carries it
    assert rows(engine, "SELECT payload->>'question' AS q FROM events WHERE thread_id = :t "
                "AND kind = 'thread.question_asked'", t=ledger.thread_id)[0].q == question  # fmt: skip
    requests = rows(
        engine, "SELECT request::text AS r FROM agent_runs WHERE dispatch_id = :d", d=doc["dispatch_id"]
    )
    assert len(requests) == 6 and all(question in r.r for r in requests)
    # And the proposition consolidated, on the two readers' independent blind endorsements,
    # and leads the outcome as its answer
    [prop] = [p for p in doc["propositions"] if p["version_id"] == version]
    assert prop["consolidated"] and prop["consolidation_id"], prop["why"]
    assert prop["why"].startswith("consolidated: ")
    assert {a for g in prop["groups"] if g["kind"] == "support" for a in g["agents"]} == {"alpha", "beta"}
    assert {s["agent"] for s in prop["stances"]} == {"alpha", "beta"}
    assert doc["answer"]["established"] and doc["answer"]["version_id"] == version
    assert doc["settled"] is True and doc["contested"] == []
    # And the cost is the runs' recorded usage, summed
    used = rows(
        engine,
        "SELECT coalesce(sum((usage->>'prompt_tokens')::int), 0) AS p, "
        "coalesce(sum((usage->>'completion_tokens')::int), 0) AS c FROM agent_runs WHERE dispatch_id = :d",
        d=doc["dispatch_id"],
    )[0]
    assert used.p > 0 and (doc["cost"]["prompt_tokens"], doc["cost"]["completion_tokens"]) == (used.p, used.c)
