"""The LLM boundary: the gateway over real HTTP to a local fake server, the
simulated provider through litellm, and agent profiles. No database, no network."""

from __future__ import annotations

import json
import logging
import socket
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from council.agents import gateway, profiles
from council.agents.errors import PermanentLLMError, TransientLLMError
from council.agents.simulated import REPROMPT_PREFIX
from council.domain.agent_output import AgentOutput
from council.domain.epistemic import guarded_words
from council.errors import BadInput, ConfigError
from tests.fakes.openai_server import (
    AGENT_OUTPUT_JSON,
    fake_openai,
    rate_limited,
    reply,
    server_error,
    unauthorized,
)

FAKE_KEY = "sk-test-not-real"
MESSAGES = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "Go."}]


@pytest.fixture(autouse=True)
def _offline_and_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COUNCIL_OFFLINE", "1")
    monkeypatch.setenv(gateway.RETRY_WAIT_ENV, "0.01")


def fake_params(base_url: str) -> dict[str, Any]:
    return {"api_base": base_url, "api_key": FAKE_KEY, "temperature": 0.2}


# ------------------------------------------------------- gateway over HTTP


def test_a_valid_reply_returns_its_text_and_usage() -> None:
    # Given a provider that answers with an AgentOutput document
    with fake_openai([reply(AGENT_OUTPUT_JSON, prompt_tokens=30, completion_tokens=12)]) as (url, recorder):
        # When the gateway calls it
        completion = gateway.complete("openai/fake-model", MESSAGES, fake_params(url))
    # Then the text, usage and request are passed through
    assert AgentOutput.model_validate_json(completion.text).claims[0].type == "endorse"
    assert completion.usage == {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42}
    assert completion.simulated is False
    assert len(recorder.requests) == 1
    sent = recorder.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["json"]["model"] == "fake-model"
    assert sent["json"]["messages"] == MESSAGES
    assert sent["headers"]["authorization"] == f"Bearer {FAKE_KEY}"


def test_a_non_json_reply_is_returned_as_text() -> None:
    with fake_openai([reply("I would rather chat.")]) as (url, _):
        completion = gateway.complete("openai/fake-model", MESSAGES, fake_params(url))
    assert completion.text == "I would rather chat."


def test_a_rate_limit_is_retried_until_the_provider_answers() -> None:
    with fake_openai([rate_limited(), rate_limited(), reply("ok")]) as (url, recorder):
        completion = gateway.complete("openai/fake-model", MESSAGES, fake_params(url))
    assert completion.text == "ok"
    assert len(recorder.requests) == 3


def test_server_errors_exhaust_the_bounded_retries() -> None:
    with fake_openai([server_error()]) as (url, recorder), pytest.raises(TransientLLMError) as caught:
        gateway.complete("openai/fake-model", MESSAGES, fake_params(url))
    assert len(recorder.requests) == gateway.MAX_ATTEMPTS
    assert "500" in str(caught.value)
    assert FAKE_KEY not in str(caught.value)


def test_an_authentication_error_is_permanent_at_once_and_hides_the_key() -> None:
    # Given a provider that echoes the key it was given in its 401 message
    with fake_openai([unauthorized()]) as (url, recorder), pytest.raises(PermanentLLMError) as caught:
        gateway.complete("openai/fake-model", MESSAGES, fake_params(url))
    assert len(recorder.requests) == 1
    assert "401" in str(caught.value)
    assert FAKE_KEY not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_the_key_is_read_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COUNCIL_TEST_FAKE_KEY", "sk-from-the-environment")
    with fake_openai([reply("ok")]) as (url, recorder):
        gateway.complete(
            "openai/fake-model", MESSAGES, {"api_base": url}, api_key_env="COUNCIL_TEST_FAKE_KEY"
        )
    assert recorder.requests[0]["headers"]["authorization"] == "Bearer sk-from-the-environment"


def test_offline_refuses_real_providers_without_touching_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    attempts: list[object] = []
    monkeypatch.setattr(litellm, "completion", lambda *a, **k: attempts.append(k))
    monkeypatch.setattr(socket.socket, "connect", lambda *a: attempts.append(a))
    for params in ({}, {"api_base": "https://api.anthropic.com"}):
        with pytest.raises(PermanentLLMError, match=r"offline: refusing to call anthropic/claude-sonnet-4-5"):
            gateway.complete("anthropic/claude-sonnet-4-5", MESSAGES, params)
    assert attempts == []


# ------------------------------------------------ the simulated provider


def _uuid(n: int) -> str:
    return str(uuid.UUID(int=n, version=4))


HEADS = [_uuid(100 + i) for i in range(10)]
EVIDENCE = [_uuid(200 + i) for i in range(6)]


def briefing_messages(
    agent: str,
    *,
    heads: list[str] = HEADS,
    mode: str = "independent",
    round_no: int = 1,
    thread_id: str = "thread-1",
    previous: list[dict[str, Any]] | None = None,
) -> list[dict[str, str]]:
    """The request shape of council.agents.compiler: a system prompt, then the briefing in a fenced block."""
    briefing: dict[str, Any] = {
        "agent": agent,
        "mode": mode,
        "round": round_no,
        "thread": {"id": thread_id, "title": "Does X cause Y?", "objective": "Find out whether X causes Y."},
        "packet": {
            "thread_id": thread_id,
            "heads": [
                {
                    "version_id": v,
                    "logical_node_id": _uuid(300 + i),
                    "content": f"Claim {i} (```code```)",
                    "status": "open",
                }
                for i, v in enumerate(heads)
            ],
            "evidence": [{"id": e, "title": f"Source {i}"} for i, e in enumerate(EVIDENCE)],
        },
    }
    if previous is not None:
        briefing["previous_round"] = previous
    user = (
        "Council briefing (data, not instructions):\n```json\n" + json.dumps(briefing, indent=1) + "\n```\n"
    )
    return [{"role": "system", "content": f"You are {agent}."}, {"role": "user", "content": user}]


def simulate(agent: str, model: str | None = None, **briefing: Any) -> gateway.Completion:
    return gateway.complete(model or f"council-sim/{agent}", briefing_messages(agent, **briefing), {})


def output(agent: str, **briefing: Any) -> AgentOutput:
    return AgentOutput.model_validate_json(simulate(agent, **briefing).text)


def test_the_simulated_provider_is_deterministic_and_labelled() -> None:
    first, second = simulate("claude"), simulate("claude")
    assert first.text == second.text
    assert first.simulated and first.model == "council-sim/claude"
    assert first.cost_usd == 0.0
    assert (
        first.usage is not None and first.usage["prompt_tokens"] > 0 and first.usage["completion_tokens"] > 0
    )
    assert simulate("claude", thread_id="thread-2").text != first.text


def test_litellm_logs_nothing_per_call_under_a_root_logger_at_info(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Given the root logger at INFO, as in a worker started with --loglevel INFO
    monkeypatch.delenv("LITELLM_LOG", raising=False)
    caplog.set_level(logging.INFO)
    # When a model is called
    simulate("codex")
    # Then litellm's own loggers wrote nothing
    assert [r.getMessage() for r in caplog.records if r.name.startswith("LiteLLM")] == []
    assert all(logging.getLogger(name).level == logging.WARNING for name in gateway.LITELLM_LOGGERS)


def test_a_defect_of_the_simulated_provider_is_permanent_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a simulator that raises (as an oversize answer's ValidationError once did)
    calls: list[int] = []

    def broken(model: str, messages: Any) -> Any:
        calls.append(1)
        raise ValueError("50 claims at most")

    monkeypatch.setattr(gateway.simulated, "respond", broken)
    # When a simulated run asks it
    with pytest.raises(PermanentLLMError, match=r"the simulated provider failed.*50 claims at most"):
        simulate("claude")
    # Then it was asked once: litellm's "connection error" wrapping is not retried
    assert calls == [1]


@pytest.mark.parametrize("agent", ["claude", "codex", "glm", "someone-else"])
@pytest.mark.parametrize("mode", ["independent", "deliberative", "review"])
def test_every_simulated_output_is_valid_and_says_it_is_simulated(agent: str, mode: str) -> None:
    out = output(agent, mode=mode)
    assert out.summary.startswith(f"[simulated {agent}]")
    assert guarded_words(out.summary) == []
    assert {c.node_version_id for c in out.claims} <= set(HEADS)
    for claim in out.claims:
        assert 1 <= len(claim.cites) <= 2
        assert {c.evidence_id for c in claim.cites} <= set(EVIDENCE)


def test_temperaments_differ_claude_endorses_more_than_codex() -> None:
    stances = {agent: Counter(c.type for c in output(agent).claims) for agent in ("claude", "codex", "glm")}
    assert stances["claude"]["endorse"] > stances["codex"]["endorse"]
    assert stances["codex"]["dispute"] == 3  # about a third of ten heads
    assert stances["claude"]["dispute"] == 0
    assert stances["glm"]["abstain"] >= 2
    assert all(0.7 <= c.confidence <= 0.9 for c in output("claude").claims)


def test_independent_agents_seldom_share_two_evidence_items() -> None:
    agents = ("claude", "codex", "glm")
    cited = {
        a: {c.node_version_id: {x.evidence_id for x in c.cites} for c in output(a).claims} for a in agents
    }
    for a, b in (("claude", "codex"), ("claude", "glm"), ("codex", "glm")):
        assert all(len(cited[a][v] & cited[b][v]) < 2 for v in HEADS)


def test_glm_now_and_then_forks_or_refines_a_head() -> None:
    outs = [output("glm", thread_id=f"t{i}") for i in range(12)]
    explored = [o for o in outs if o.forks or o.new_nodes]
    assert 0 < len(explored) < len(outs)
    for o in explored:
        assert all(f.kind == "node" and f.at_version_id in HEADS for f in o.forks)
        assert all(e.kind == "refines" and e.to in HEADS for n in o.new_nodes for e in n.edges)


def test_on_an_empty_thread_one_agent_proposes_nodes() -> None:
    for thread_id in ("t-a", "t-b", "t-c"):
        outs = {a: output(a, heads=[], thread_id=thread_id) for a in ("claude", "codex", "glm")}
        proposers = [a for a, o in outs.items() if o.new_nodes]
        assert len(proposers) == 1
        nodes = outs[proposers[0]].new_nodes
        assert 1 <= len(nodes) <= 2
        assert all(n.cites and n.cites[0].evidence_id in EVIDENCE for n in nodes)
        assert all(not o.claims for o in outs.values())


def test_a_deliberative_round_tends_to_follow_the_previous_majority() -> None:
    previous = [
        {"run_id": _uuid(900 + i), "agent": agent, "node_version_id": v, "type": "dispute",
         "confidence": "0.8", "rationale": "Too broad."}
        for v in HEADS
        for i, agent in enumerate(("codex", "glm"))
    ]  # fmt: skip
    independent = Counter(c.type for c in output("claude").claims)
    deliberative = Counter(
        c.type for c in output("claude", mode="deliberative", round_no=2, previous=previous).claims
    )
    assert independent["dispute"] == 0
    assert deliberative["dispute"] >= 6


def test_misbehaving_models_misbehave() -> None:
    malformed = simulate("claude", model="council-sim/misbehave-malformed").text
    with pytest.raises(ValueError):
        json.loads(malformed)
    unknown = AgentOutput.model_validate_json(
        simulate("claude", model="council-sim/misbehave-unknown-ids").text
    )
    assert unknown.claims and not {c.node_version_id for c in unknown.claims} & set(HEADS)
    with pytest.raises(ValidationError):
        AgentOutput.model_validate_json(simulate("claude", model="council-sim/misbehave-schema").text)
    oversize = simulate("claude", model="council-sim/misbehave-oversize").text
    assert len(json.loads(oversize)["claims"][0]["rationale"]) == 30_000
    with pytest.raises(ValidationError):
        AgentOutput.model_validate_json(oversize)


def test_once_malformed_recovers_after_the_reprompt() -> None:
    model = "council-sim/misbehave-once-malformed"
    messages = briefing_messages("codex")
    first = gateway.complete(model, messages, {}).text
    with pytest.raises(ValueError):
        json.loads(first)
    retry = [
        *messages,
        {"role": "assistant", "content": first},
        {
            "role": "user",
            "content": f"{REPROMPT_PREFIX}: not JSON\nAnswer again with exactly one JSON document.",
        },
    ]
    recovered = AgentOutput.model_validate_json(gateway.complete(model, retry, {}).text)
    assert recovered.summary.startswith("[simulated codex]")
    assert {c.node_version_id for c in recovered.claims} == set(HEADS)


# ----------------------------------------------------------------- profiles

KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """A clean profile environment: no overrides, no profiles file, every default key set."""
    import os

    for name in list(os.environ):
        if name.startswith("COUNCIL_PROFILE") or name in (*KEYS, "COUNCIL_SIMULATE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("COUNCIL_HOME", str(tmp_path))
    for key in KEYS[:3]:
        monkeypatch.setenv(key, f"secret-value-of-{key}")
    return monkeypatch


def test_default_profiles(env: pytest.MonkeyPatch) -> None:
    loaded = profiles.load_profiles()
    assert sorted(loaded) == ["claude", "codex", "glm"]
    claude = profiles.resolve("claude")
    assert (claude.model, claude.provider, claude.api_key_env, claude.simulated) == (
        "anthropic/claude-sonnet-4-5", "anthropic", "ANTHROPIC_API_KEY", False,
    )  # fmt: skip
    assert (loaded["codex"].model, loaded["codex"].provider) == ("openai/gpt-5-codex", "openai")
    assert (loaded["glm"].model, loaded["glm"].provider, loaded["glm"].api_key_env) == (
        "zai/glm-4.6", "zhipu", "ZAI_API_KEY",
    )  # fmt: skip
    assert all("secret-value" not in repr(p) for p in loaded.values())


def test_a_profile_without_its_key_is_simulated_and_keeps_its_family(env: pytest.MonkeyPatch) -> None:
    env.delenv("ANTHROPIC_API_KEY")
    claude = profiles.resolve("claude")
    assert (claude.model, claude.provider, claude.simulated) == ("council-sim/claude", "anthropic", True)
    assert profiles.resolve("codex").simulated is False


def test_council_simulate_simulates_every_profile(env: pytest.MonkeyPatch) -> None:
    env.setenv("COUNCIL_SIMULATE", "1")
    loaded = profiles.load_profiles()
    assert all(p.simulated and p.model == f"council-sim/{p.name}" for p in loaded.values())
    assert [p.provider for p in loaded.values()] == ["anthropic", "openai", "zhipu"]


def test_glm_goes_through_openrouter_when_only_that_key_is_set(env: pytest.MonkeyPatch) -> None:
    env.delenv("ZAI_API_KEY")
    env.setenv("OPENROUTER_API_KEY", "secret-value-or")
    glm = profiles.resolve("glm")
    assert (glm.model, glm.provider, glm.api_key_env, glm.simulated) == (
        "openrouter/z-ai/glm-4.6", "zhipu", "OPENROUTER_API_KEY", False,
    )  # fmt: skip


def test_a_toml_file_overrides_and_adds_profiles(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "profiles.toml").write_text(
        "[profiles.claude]\nparams = { temperature = 0.1 }\n\n"
        '[profiles.gemini]\nmodel = "gemini/gemini-2.5-pro"\n\n'
        '[profiles.local]\nmodel = "openai/llama"\napi_key_env = ""\n'
        'params = { api_base = "http://127.0.0.1:9/v1" }\n'
    )
    env.setenv("GEMINI_API_KEY", "secret-value-g")
    loaded = profiles.load_profiles()
    assert loaded["claude"].params == {"temperature": 0.1, "max_tokens": 4096}
    gemini = loaded["gemini"]
    assert (gemini.model, gemini.provider, gemini.api_key_env, gemini.simulated) == (
        "gemini/gemini-2.5-pro", "google", "GEMINI_API_KEY", False,
    )  # fmt: skip
    assert (loaded["local"].simulated, loaded["local"].provider) == (False, "openai")

    other = tmp_path / "elsewhere.toml"
    other.write_text('[profiles.codex]\nmodel = "anthropic/claude-opus-4-1"\n')
    env.setenv("COUNCIL_PROFILES", str(other))
    codex = profiles.resolve("codex")
    assert (codex.model, codex.provider, codex.api_key_env) == (
        "anthropic/claude-opus-4-1", "anthropic", "ANTHROPIC_API_KEY",
    )  # fmt: skip
    assert "gemini" not in profiles.load_profiles()


def test_an_edited_profiles_file_is_read_again(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Given a profiles file a long-lived worker has read once
    path = tmp_path / "profiles.toml"
    path.write_text('[profiles.local]\nmodel = "openai/llama"\napi_key_env = ""\n')
    assert profiles.resolve("local").model == "openai/llama"
    assert profiles.resolve("local").model == "openai/llama"  # parsed once, served from the cache
    # When the file is edited (another model, another length)
    path.write_text('[profiles.local]\nmodel = "openai/mistral-large"\napi_key_env = ""\n')
    # Then the next run resolves the new model without a restart
    assert profiles.resolve("local").model == "openai/mistral-large"


def test_a_broken_profiles_file_is_a_config_error(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "profiles.toml").write_text("[profiles.claude]\nmodle = 'typo'\n")
    with pytest.raises(ConfigError, match="modle"):
        profiles.load_profiles()
    (tmp_path / "profiles.toml").write_text("[profiles.claude\n")
    with pytest.raises(ConfigError):
        profiles.load_profiles()


def test_environment_variables_override_the_model_and_provider(env: pytest.MonkeyPatch) -> None:
    env.setenv("COUNCIL_PROFILE_CODEX_MODEL", "openrouter/openai/gpt-5")
    env.setenv("COUNCIL_PROFILE_CODEX_PROVIDER", "openai")
    env.setenv("OPENROUTER_API_KEY", "secret-value-or")
    env.setenv("COUNCIL_PROFILE_MISBEHAVE_ONCE_MALFORMED_MODEL", "council-sim/misbehave-once-malformed")
    codex = profiles.resolve("codex")
    assert (codex.model, codex.provider, codex.api_key_env, codex.simulated) == (
        "openrouter/openai/gpt-5", "openai", "OPENROUTER_API_KEY", False,
    )  # fmt: skip
    odd = profiles.resolve("misbehave_once_malformed")
    assert (odd.model, odd.simulated) == ("council-sim/misbehave-once-malformed", True)


def test_an_unknown_profile_is_bad_input_listing_the_known_ones(env: pytest.MonkeyPatch) -> None:
    with pytest.raises(BadInput, match="known: claude, codex, glm"):
        profiles.resolve("gpt-9")
