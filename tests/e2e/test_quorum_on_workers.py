"""An honest quorum (issue 34 part 3) on real Postgres, Redis and Celery workers: under
council-default-v2 a node whose council lost a member does not consolidate, the reason
names the agent that did not answer, and a re-run of that agent completes the quorum, so
the node consolidates, once. The lost member is an API model whose server refuses every
call (HTTP 401); the two others are local reading models that endorse."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine

from council.services.counterfactual import pin_rule_set
from tests.builders import ACTOR, Ledger
from tests.e2e.conftest import Workers, council, rows, wait_for
from tests.engines import uow_of
from tests.fakes.agent_model import SseHandler, serving
from tests.fakes.chat_model import chat_model, messages_model

NO_KEYS = {name: "" for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZAI_API_KEY", "OPENROUTER_API_KEY")}
PROFILE = '[profiles.{name}]\nmodel = "{model}"\napi_key_env = ""\napi_base = "{url}"\n'


@contextmanager
def refusing_model() -> Iterator[str]:
    """An OpenAI-compatible server that refuses every call with 401; yields its base URL."""

    class Handler(SseHandler):
        def do_POST(self) -> None:
            self.read_json()
            self.send_json(
                401, {"error": {"message": "refused by the test", "type": "invalid_request_error"}}
            )

    with serving(Handler, "refusing-model") as url:
        yield f"{url}/v1"


def write_profiles(path: Path, alpha: str, beta: str, gamma: str) -> None:
    path.write_text(
        "\n".join(
            (
                PROFILE.format(name="alpha", model="openai/alpha-model", url=alpha),
                PROFILE.format(name="beta", model="anthropic/claude-fake", url=beta),
                PROFILE.format(name="gamma", model="openai/gamma-model", url=gamma),
            )
        )
    )


def test_a_council_that_lost_a_member_waits_for_its_rerun_then_consolidates_once(
    engine: Engine, workers: Workers, worker_env: dict[str, str], tmp_path: Path
) -> None:
    # Given new threads pinned to council-default-v2, and a proposition citing evidence
    pin_rule_set(uow_of(engine), "council-default-v2", actor=ACTOR)
    ledger = Ledger.new(engine, evidence_items=3)
    version = str(
        ledger.node("The replica keeps up under load", cites=list(ledger.evidence[:2]))["version_id"]
    )
    thread = str(ledger.thread_id)
    profiles = tmp_path / "profiles.toml"
    env = {
        **worker_env,
        **NO_KEYS,
        "COUNCIL_PROFILES": str(profiles),
        "COUNCIL_SIMULATE": "never",
        "COUNCIL_INLINE_EVIDENCE_TOKENS": "0",
    }
    with (
        chat_model(endorse=True) as (chat, _),
        messages_model(endorse=True) as (messages, _),
        refusing_model() as refusing,
    ):
        write_profiles(profiles, chat, messages, refusing)
        workers("--queues", "runs", "--pool", "threads", "--concurrency", "4", env=env)
        workers("--queues", "commit,maintenance", env=env)
        # When the three are dispatched and gamma's server refuses it
        sent = council(
            env, "dispatch", "--thread", thread, "--agents", "alpha,beta,gamma", "--wait",
            "--timeout", "240", "--json",
        )  # fmt: skip
        assert sent.returncode == 1, sent.stderr
        doc = json.loads(sent.stdout)
        assert {r["agent"]: r["status"] for r in doc["runs"]} == {
            "alpha": "succeeded",
            "beta": "succeeded",
            "gamma": "failed",
        }
        # Then the commit worker's own evaluation after the failure names the member that did
        # not answer (a failed run claims nothing: its end re-evaluates its council's versions)
        wanted = "not answered: gamma (failed)"

        def named() -> bool:
            recorded = json.loads(council(env, "history", "--node", version, "--json").stdout)["evaluations"]
            return any(wanted in r["detail"] for e in recorded[-1:] for r in e["reasons"])

        wait_for(named, 120, "an evaluation naming gamma")
        # And the node does not consolidate, though two providers endorsed it
        decided = council(env, "consolidate", "--node", version, "--json")
        assert decided.returncode == 0, decided.stderr
        verdict = json.loads(decided.stdout)
        assert verdict["outcome"] == "not_ready"
        failed = {r["rule"]: r["detail"] for r in verdict["reasons"] if not r["ok"]}
        assert failed == {
            "council_answered": "2 of 3 council agent(s) answered, a 0.75 share required; "
            "not answered: gamma (failed)"
        }
        count = "SELECT count(*) AS n FROM consolidations WHERE node_version_id = :v"
        assert rows(engine, count, v=version)[0].n == 0

        # When gamma alone is dispatched again, its server now answering
        write_profiles(profiles, chat, messages, chat)
        again = council(
            env, "dispatch", "--thread", thread, "--agents", "gamma", "--wait", "--timeout", "240", "--json"
        )
        assert again.returncode == 0, again.stderr
        # Then the quorum is complete and the node consolidates, exactly once
        wait_for(lambda: rows(engine, count, v=version)[0].n >= 1, 120, "the node's consolidation")
        repeat = json.loads(council(env, "consolidate", "--node", version, "--json").stdout)
        assert repeat["outcome"] == "already_consolidated"
        assert all(r["ok"] for r in repeat["reasons"]), repeat["reasons"]
    assert rows(engine, count, v=version)[0].n == 1
    [stored] = rows(engine, "SELECT snapshot FROM consolidations WHERE node_version_id = :v", v=version)
    seats = stored.snapshot["council"]
    assert sorted((s["agent"], s["status"]) for s in seats) == [
        ("alpha", "succeeded"),
        ("beta", "succeeded"),
        ("gamma", "failed"),
        ("gamma", "succeeded"),
    ]
