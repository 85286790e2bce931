"""The LLM boundary: the gateway over real HTTP to a local fake server, and the
simulated provider through litellm. No database, no network. (Profiles:
tests/unit/test_profiles.py.)"""

from __future__ import annotations

import json
import logging
import socket
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import ValidationError

from council.agents import gateway, openai_direct
from council.agents.errors import PermanentLLMError, TransientLLMError, UnreachableLLMError
from council.agents.simulated import REPROMPT_PREFIX
from council.domain.agent_output import AgentOutput
from council.domain.epistemic import guarded_words
from tests.fakes.chat_model import chat_model
from tests.fakes.openai_server import (
    AGENT_OUTPUT_JSON,
    Step,
    client_error,
    fake_openai,
    rate_limited,
    read_evidence,
    reply,
    server_error,
    unauthorized,
)

FAKE_KEY = "sk-test-not-real-0123456789"
KEY_VAR = "COUNCIL_TEST_FAKE_KEY"
WORKER_OPENAI_KEY = "sk-the-workers-own-openai-key-0123"
MESSAGES = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "Go."}]
PARAMS = {"temperature": 0.2}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COUNCIL_OFFLINE", "1")
    monkeypatch.setenv(KEY_VAR, FAKE_KEY)
    # litellm's route unless a test asks for both (``route``): the tests that stub litellm meet it.
    monkeypatch.setenv("COUNCIL_OPENAI_DIRECT", "0")


ROUTES = ("litellm", "openai-sdk")


@pytest.fixture(params=ROUTES)
def route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each contract test of the OpenAI-compatible path runs on both routes of the gateway:
    through litellm (``COUNCIL_OPENAI_DIRECT=0``) and on the OpenAI SDK directly
    (``council.agents.openai_direct``), and checks that the call took the route named."""
    gateway._prepare_litellm()  # its price map from the package, before litellm is imported
    import litellm

    direct = request.param == "openai-sdk"
    monkeypatch.setenv("COUNCIL_OPENAI_DIRECT", "1" if direct else "0")
    taken: list[str] = []
    create, completion = openai_direct.create, litellm.completion
    monkeypatch.setattr(
        openai_direct, "create", lambda *a, **k: taken.append("openai-sdk") or create(*a, **k)
    )
    monkeypatch.setattr(litellm, "completion", lambda *a, **k: taken.append("litellm") or completion(*a, **k))
    yield request.param
    assert set(taken) <= {request.param}, f"a call went through {set(taken) - {request.param}}"


def ask(base_url: str, key: str = KEY_VAR) -> gateway.Completion:
    """One completion from the fake server, keyed by the variable ``key`` names ("" for none)."""
    return gateway.complete("openai/fake-model", MESSAGES, dict(PARAMS), api_base=base_url, api_key_env=key)


# ------------------------------------------------------- gateway over HTTP


@pytest.mark.usefixtures("route")
def test_a_valid_reply_returns_its_text_and_usage() -> None:
    # Given a provider that answers with an AgentOutput document
    with fake_openai([reply(AGENT_OUTPUT_JSON, prompt_tokens=30, completion_tokens=12)]) as (url, recorder):
        # When the gateway calls it
        completion = ask(url)
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


@pytest.mark.usefixtures("route")
def test_a_non_json_reply_is_returned_as_text() -> None:
    with fake_openai([reply("I would rather chat.")]) as (url, _):
        completion = ask(url)
    assert completion.text == "I would rather chat."


@pytest.mark.parametrize(
    "step",
    [rate_limited(), server_error(), client_error(502), client_error(503)],
    ids=lambda s: str(s.status),
)
@pytest.mark.usefixtures("route")
def test_a_transient_error_is_one_attempt_and_says_so(step: Step) -> None:
    # Given a provider that is rate limited or failing
    with fake_openai([step, reply("ok")]) as (url, recorder), pytest.raises(TransientLLMError) as caught:
        # When the gateway is asked
        ask(url)
    # Then it asked once (the run's task owns the retries) and the error is transient, without the key
    assert len(recorder.requests) == 1
    assert f"HTTP {step.status}" in str(caught.value)
    assert FAKE_KEY not in str(caught.value)


@pytest.mark.parametrize("status", [400, 403, 404])
@pytest.mark.usefixtures("route")
def test_a_client_error_is_permanent_at_once(status: int) -> None:
    with (
        fake_openai([client_error(status), reply("ok")]) as (url, recorder),
        pytest.raises(PermanentLLMError),
    ):
        ask(url)
    assert len(recorder.requests) == 1


@pytest.mark.usefixtures("route")
def test_an_authentication_error_is_permanent_at_once_and_hides_the_key() -> None:
    # Given a provider that echoes the key it was given in its 401 message
    with fake_openai([unauthorized()]) as (url, recorder), pytest.raises(PermanentLLMError) as caught:
        ask(url)
    assert len(recorder.requests) == 1
    assert "401" in str(caught.value)
    assert FAKE_KEY not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


@pytest.mark.usefixtures("route")
def test_the_key_is_read_from_the_named_variable_and_never_the_providers_usual_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a worker with its own OPENAI_API_KEY, and a profile naming another variable
    monkeypatch.setenv("OPENAI_API_KEY", WORKER_OPENAI_KEY)
    monkeypatch.setenv(KEY_VAR, "sk-from-the-named-variable-0123")
    with fake_openai([reply("ok")]) as (url, recorder):
        ask(url)
    # Then the server received the named variable's key
    assert recorder.requests[0]["headers"]["authorization"] == "Bearer sk-from-the-named-variable-0123"


@pytest.mark.usefixtures("route")
def test_an_own_api_base_without_a_key_variable_gets_a_placeholder_not_the_workers_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a worker whose OPENAI_API_KEY is set, and a profile with its own api_base and api_key_env = ""
    monkeypatch.setenv("OPENAI_API_KEY", WORKER_OPENAI_KEY)
    with fake_openai([reply("ok")]) as (url, recorder):
        # When it is called
        completion = ask(url, key="")
    # Then the local server answered, and was sent the placeholder, never the worker's key
    assert completion.text == "ok"
    sent = recorder.requests[0]["headers"]["authorization"]
    assert sent == f"Bearer {gateway.NO_KEY}"
    assert WORKER_OPENAI_KEY not in json.dumps(recorder.requests)


@pytest.mark.usefixtures("route")
def test_an_own_api_base_without_a_key_variable_works_on_a_worker_with_no_keys_at_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a worker with no provider key in its environment
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ZAI_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with fake_openai([reply(AGENT_OUTPUT_JSON)]) as (url, recorder):
        # When a profile with its own api_base and api_key_env = "" is called
        completion = ask(url, key="")
    # Then the OpenAI client did not refuse ("Missing credentials"): the server answered
    assert AgentOutput.model_validate_json(completion.text).claims
    assert len(recorder.requests) == 1


@pytest.mark.usefixtures("route")
def test_a_named_key_variable_that_is_unset_is_permanent_without_a_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(KEY_VAR)
    with fake_openai([reply("ok")]) as (url, recorder), pytest.raises(PermanentLLMError, match=KEY_VAR):
        ask(url)
    assert recorder.requests == []


def test_missing_credentials_reported_as_a_500_are_permanent(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given litellm's report of a client that refused to send without a key (an HTTP 500, as litellm says)
    import litellm

    def refuses(**_: Any) -> Any:
        raise litellm.InternalServerError(
            message="OpenAIException - Missing credentials. Please pass an `api_key`, or set the "
            "`OPENAI_API_KEY` environment variable.",
            llm_provider="openai",
            model="fake-model",
        )

    gateway.preload()
    monkeypatch.setattr(litellm, "completion", refuses)
    # When the gateway meets it, it is permanent: asking again cannot help
    with pytest.raises(PermanentLLMError, match="Missing credentials"):
        gateway.complete("openai/fake-model", MESSAGES, {}, api_base="http://127.0.0.1:9/v1", api_key_env="")


def test_missing_credentials_reported_as_a_500_by_the_sdk_are_permanent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the same report from the OpenAI SDK itself, on the direct route
    import httpx
    import openai

    monkeypatch.setenv("COUNCIL_OPENAI_DIRECT", "1")

    def refuses(*_: Any, **__: Any) -> Any:
        request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
        raise openai.InternalServerError(
            "Missing credentials. Please pass an `api_key`, or set the `OPENAI_API_KEY` variable.",
            response=httpx.Response(500, request=request),
            body=None,
        )

    monkeypatch.setattr(openai.resources.chat.Completions, "create", refuses)
    # When the gateway meets it, it is permanent there too
    with pytest.raises(PermanentLLMError, match="Missing credentials"):
        gateway.complete("openai/fake-model", MESSAGES, {}, api_base="http://127.0.0.1:9/v1", api_key_env="")


@pytest.mark.usefixtures("route")
def test_a_timeout_is_transient() -> None:
    # Given a model slower than the call's timeout
    with chat_model(latency_s=1.5) as (url, _), pytest.raises(TransientLLMError, match=r"(?i)time"):
        gateway.complete("openai/fake-model", MESSAGES, {"timeout": 0.3}, api_base=url)


@pytest.mark.usefixtures("route")
def test_a_refused_connection_is_transient_and_names_the_endpoint_never_its_key() -> None:
    # Given an endpoint where nothing listens, named with a query that carries a key
    port = _closed_port()
    base = f"http://127.0.0.1:{port}/v1?key=sk-query-secret-0123456789"
    # When it is called, on either route
    with pytest.raises(UnreachableLLMError) as refused:
        gateway.complete("openai/fake-model", MESSAGES, {}, api_base=base, api_key_env=KEY_VAR)
    # Then the error is transient (retried, on the short schedule) and names host and port only
    assert isinstance(refused.value, TransientLLMError)
    assert str(refused.value) == f"openai/fake-model: cannot connect to 127.0.0.1:{port}: connection refused"


@pytest.mark.usefixtures("route")
def test_a_server_error_is_transient_but_not_unreachable() -> None:
    with fake_openai([server_error()]) as (url, _), pytest.raises(TransientLLMError) as failed:
        gateway.complete("openai/fake-model", MESSAGES, {}, api_base=url)
    assert not isinstance(failed.value, UnreachableLLMError)


@pytest.mark.usefixtures("route")
def test_tool_calls_come_back_with_their_ids_names_and_arguments() -> None:
    tools = [{"type": "function", "function": {"name": "read_evidence", "parameters": {"type": "object"}}}]
    with fake_openai([read_evidence("e-1", "e-2")]) as (url, recorder):
        completion = gateway.complete("openai/fake-model", MESSAGES, {}, api_base=url, tools=tools)
    assert recorder.requests[0]["json"]["tools"] == tools
    assert [(c.id, c.name, json.loads(c.arguments)) for c in completion.tool_calls] == [
        ("call_0", "read_evidence", {"id": "e-1"}),
        ("call_1", "read_evidence", {"id": "e-2"}),
    ]


ALL_PASSED = {
    "temperature": 0.2, "top_p": 0.9, "max_tokens": 100, "stop": ["\n\n"], "seed": 3,
    "presence_penalty": 0.1, "frequency_penalty": 0.2, "timeout": 30,
}  # fmt: skip


def test_both_routes_send_the_same_request_and_return_the_same_completion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given every parameter the direct route takes, tools, and a model litellm can price
    tools = [{"type": "function", "function": {"name": "read_evidence", "parameters": {"type": "object"}}}]
    sent, answers = {}, {}
    for direct in ("0", "1"):
        monkeypatch.setenv("COUNCIL_OPENAI_DIRECT", direct)
        with fake_openai([reply("ok", prompt_tokens=1000, completion_tokens=500)]) as (url, recorder):
            answers[direct] = [
                gateway.complete(m, MESSAGES, ALL_PASSED, api_base=url, api_key_env=KEY_VAR, tools=tools)
                for m in ("openai/gpt-4o-mini", "openai/fake-model")
            ]
        sent[direct] = [(r["path"], r["json"], r["headers"]["authorization"]) for r in recorder.requests]
    # Then the server saw the same requests, and the answers are the same, priced alike
    assert sent["1"] == sent["0"]
    assert answers["1"] == answers["0"]
    assert answers["1"][0].cost_usd == pytest.approx(0.00045)  # 1,000 + 500 tokens of gpt-4o-mini
    assert answers["1"][1].cost_usd is None  # a model the price map lacks: unpriced


@pytest.mark.parametrize(
    ("model", "params", "direct"),
    [
        ("openai/fake-model", {"temperature": 0.2, "timeout": 5}, True),
        ("openai/fake-model", {"top_k": 5}, False),  # a parameter litellm maps or drops
        ("openai/o3-mini", {"max_tokens": 10}, False),  # litellm renames max_tokens for o-series
        ("openai/gpt-5.5", {}, False),
        ("anthropic/claude-sonnet-4-6", {}, False),
    ],
)
def test_only_calls_litellm_would_send_unchanged_take_the_direct_route(
    model: str, params: dict[str, Any], direct: bool
) -> None:
    assert openai_direct.takes(model, "http://127.0.0.1:9/v1", params) is direct
    assert openai_direct.takes(model, None, params) is False  # the provider's own endpoint: litellm


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("owned", ["api_key", "api_base", "base_url", "num_retries", "max_retries"])
@pytest.mark.usefixtures("route")
def test_call_parameters_never_carry_the_key_endpoint_or_retries(owned: str) -> None:
    with pytest.raises(PermanentLLMError, match=owned):
        gateway.complete("openai/fake-model", MESSAGES, {owned: "x"}, api_base="http://127.0.0.1:9/v1")


@pytest.mark.usefixtures("route")
def test_offline_refuses_real_providers_without_touching_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    attempts: list[object] = []
    monkeypatch.setattr(litellm, "completion", lambda *a, **k: attempts.append(k))
    monkeypatch.setattr(socket.socket, "connect", lambda *a: attempts.append(a))
    for api_base in (None, "https://api.anthropic.com"):
        with pytest.raises(PermanentLLMError, match=r"offline: refusing to call anthropic/claude-sonnet-4-6"):
            gateway.complete("anthropic/claude-sonnet-4-6", MESSAGES, {}, api_base=api_base)
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

    def broken(model: str, messages: Any, **_: Any) -> Any:
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


def test_preloading_makes_one_simulated_call_that_spares_the_latency(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given simulated calls that wait 30 s, a clock that records such waits instead (the
    # module is the process's own: litellm's threads may sleep briefly), and a process that
    # has not preloaded yet
    gateway._prepare_litellm()
    waits: list[float] = []
    answered: list[str] = []
    respond = gateway.simulated.respond
    monkeypatch.setenv("COUNCIL_SIM_LATENCY", "30")
    monkeypatch.setattr(gateway.time, "sleep", lambda s: s >= 1 and waits.append(s))
    monkeypatch.setattr(
        gateway.simulated, "respond", lambda m, *a, **k: answered.append(m) or respond(m, *a, **k)
    )
    monkeypatch.setattr(gateway, "_warmed", False)
    # When a worker preloads (twice: a baseline task calls it per task), then makes a run's call
    gateway.preload()
    gateway.preload()
    assert (answered, waits) == ([gateway.WARM_UP_MODEL], [])
    gateway.complete("council-sim/claude", MESSAGES, {})
    # Then the preload called once, and only the run's call waited
    assert (answered, waits) == ([gateway.WARM_UP_MODEL, "council-sim/claude"], [30.0])


@pytest.mark.parametrize(
    "body",
    [
        {"id": "chatcmpl-fake"},
        {"choices": "none"},
        {"choices": [{"message": 3}]},
        {"choices": [{"message": {"content": 5}}]},
    ],
    ids=["no-choices", "choices-not-a-list", "message-not-an-object", "content-not-text"],
)
@pytest.mark.usefixtures("route")
def test_a_malformed_answer_is_transient_on_both_routes(body: dict[str, Any]) -> None:
    # Given a server that answers 200 with a body that is no chat completion: the gateway
    # refuses it as one failed, transient attempt on either route (litellm reports it as a
    # provider's 500; the SDK builds its response without validating it)
    with (
        fake_openai([Step(200, body)]) as (url, _),
        pytest.raises(TransientLLMError, match="openai/fake-model: "),
    ):
        ask(url)
