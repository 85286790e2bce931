"""What runs cost (issue 35): an API run's tokens and litellm's price land on the run
(NULL, flagged ``unpriced``, for a model without a price), add up per thread in
`thread show`, and count in the Prometheus token and cost counters. Real Postgres, a
fake OpenAI-compatible provider."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import Engine

from council import metrics
from council.adapters.scheduler import Recorder
from council.agents.errors import TransientLLMError
from council.agents.pricing import price
from council.domain.agent_output import AgentOutput, ClaimOut
from council.ledger.unit import UnitOfWork
from council.services.budgets import set_thread_budget, thread_budget
from council.services.execution import execute_run
from council.services.threads import show_thread
from tests.conftest import CliRunner
from tests.dashboard import view_rows
from tests.fakes.openai_server import Step, client_error, fake_openai, read_evidence, reply, server_error
from tests.integration.test_run_outcomes import (  # noqa: F401 (the autouse fixture)
    _dispatch,
    _fake_agent,
    _offline_profile_env,
    _run,
    _thread,
    _valid_output,
)
from tests.scrape import sample


def test_an_unpriced_run_records_its_tokens_and_no_cost_and_the_thread_totals_say_so(
    engine: Engine, uow: UnitOfWork, cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a thread, a model litellm has no price for, and the counters before
    ledger, heads = _thread(engine)
    answer = _valid_output(ledger, heads).model_dump_json()
    labels = {"provider": "openai", "model": "openai/fake-model"}
    before = metrics.exposition()[0]
    assert show_thread(uow, ledger.thread_id).cost.model_dump() == {
        "usd": 0.0, "prompt_tokens": 0, "completion_tokens": 0, "runs_priced": 0, "runs_unpriced": 0,
        "unpriced_reasons": [],
    }  # fmt: skip
    # When a run of it succeeds
    with _fake_agent(monkeypatch, tmp_path, [reply(answer, prompt_tokens=120, completion_tokens=40)]):
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        assert execute_run(uow, Recorder(), run_id).status == "succeeded"
    # Then its tokens are recorded and its cost is unknown (NULL, not 0), and it says so
    run = _run(engine, run_id)
    assert run["cost_usd"] is None
    assert run["usage"]["unpriced"] is True
    assert (run["usage"]["prompt_tokens"], run["usage"]["completion_tokens"]) == (120, 40)
    # And the thread's totals count its tokens and the run as unpriced
    assert show_thread(uow, ledger.thread_id).cost.model_dump() == {
        "usd": 0.0, "prompt_tokens": 120, "completion_tokens": 40, "runs_priced": 0, "runs_unpriced": 1,
        "unpriced_reasons": ["no price for openai/fake-model in litellm's price map"],
    }  # fmt: skip
    # And the token counters grew by its tokens, the cost counter not at all
    after = metrics.exposition()[0]
    for kind, tokens in (("prompt", 120), ("completion", 40)):
        counted = sample(after, "council_tokens_total", kind=kind, **labels)
        assert counted == sample(before, "council_tokens_total", kind=kind, **labels) + tokens
    cost = "council_cost_usd_total"
    assert sample(after, cost, **labels) == sample(before, cost, **labels)
    # And `thread show` gives the totals, in JSON and in one line for a person
    shown = cli("thread", "show", str(ledger.thread_id), "--json").json()
    assert shown["cost"]["runs_unpriced"] == 1 and shown["cost"]["prompt_tokens"] == 120
    human = cli("thread", "show", str(ledger.thread_id)).stdout
    assert (
        "120 prompt + 40 completion tokens; 1 run(s) unpriced "
        "(no price for openai/fake-model in litellm's price map: cost unknown)"
    ) in human
    # And the dashboard's view council_v_costs has the run under its dispatch, agent and model
    [row] = view_rows(engine, "council_v_costs", thread_id=ledger.thread_id)
    assert (row["agent"], row["provider"], row["model"]) == ("fake", "openai", "openai/fake-model")
    assert (row["runs"], row["prompt_tokens"], row["completion_tokens"]) == (1, 120, 40)
    assert (row["usd"], row["runs_priced"], row["runs_unpriced"]) == (0, 0, 1)
    assert row["dispatch_id"] == run["dispatch_id"]
    # And the dispatch and the run listing count it as unpriced, in JSON and for a person
    dispatch_id = str(run["dispatch_id"])
    assert cli("dispatch", "show", dispatch_id, "--json").json()["cost"]["unpriced"] == 1
    listed = cli("run", "list", "--thread", str(ledger.thread_id), "--json").json()
    assert listed["cost"]["unpriced"] == 1
    assert "1 run(s) unpriced" in cli("dispatch", "show", dispatch_id).stdout


# ------------------------------------------------------------ billed calls of failed runs

PRICED = "openai/gpt-4o-mini"  # in litellm's local price map: $0.15 / $0.60 per million tokens
PRICED_PROFILE = """\
[profiles.fake]
model = "openai/gpt-4o-mini"
provider = "openai"
api_key_env = "FAKE_KEY"
api_base = "{base_url}"
params = {max_tokens = 600}
"""


@contextmanager
def _priced_agent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, script: list[Step]) -> Iterator[None]:
    """The profile ``fake`` on a priced model name, served by a fake provider."""
    with fake_openai(script) as (base_url, _):
        path = tmp_path / "profiles.toml"
        path.write_text(PRICED_PROFILE.replace("{base_url}", base_url), encoding="utf-8")
        monkeypatch.setenv("COUNCIL_PROFILES", str(path))
        yield


def _cost_of(*calls: tuple[int, int]) -> float:
    """What calls of (prompt, completion) tokens of the priced model cost by litellm's map."""
    tokens = {"prompt_tokens": sum(p for p, _ in calls), "completion_tokens": sum(c for _, c in calls)}
    cost = price(PRICED, tokens)
    assert cost is not None and cost > 0
    return cost


def test_a_run_failed_on_invalid_output_records_its_billed_calls_and_the_budget_counts_them(
    engine: Engine, uow: UnitOfWork, cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a thread with a budget, and a priced model that never answers in JSON
    ledger, _ = _thread(engine)
    set_thread_budget(uow, ledger.thread_id, 1, actor="test")
    prose = reply("I would rather not answer in JSON.", prompt_tokens=1000, completion_tokens=240)
    with _priced_agent(monkeypatch, tmp_path, [prose]):
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        # When the run fails after its one re-prompt
        assert execute_run(uow, Recorder(), run_id).status == "failed"
    # Then it records both calls' tokens and their cost, priced: not "unpriced"
    run = _run(engine, run_id)
    assert run["error"].startswith("invalid output after one re-prompt")
    usage = run["usage"]
    assert (usage["calls"], usage["prompt_tokens"], usage["completion_tokens"]) == (2, 2000, 480)
    assert "unpriced" not in run["usage"]
    assert float(run["cost_usd"]) == pytest.approx(_cost_of((1000, 240), (1000, 240)), abs=1e-6)
    # And the thread's budget counts it as spent, with nothing left reserved
    state = thread_budget(uow, ledger.thread_id).state
    assert state.spent_usd == pytest.approx(float(run["cost_usd"]), abs=1e-6) and state.reserved_usd == 0
    # And the thread's totals count it as a priced run
    cost = show_thread(uow, ledger.thread_id).cost
    assert (cost.runs_priced, cost.runs_unpriced) == (1, 0)
    assert cost.usd == pytest.approx(float(run["cost_usd"]))
    assert "unpriced" not in cli("thread", "show", str(ledger.thread_id)).stdout


def test_a_permanent_error_after_a_tool_round_keeps_that_rounds_cost_and_says_the_agent_is_down(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given evidence left out of the briefing, and a priced model that reads it, then is refused
    monkeypatch.setenv("COUNCIL_INLINE_EVIDENCE_TOKENS", "0")
    ledger, _ = _thread(engine)
    read = read_evidence(str(ledger.evidence[0]))
    with _priced_agent(monkeypatch, tmp_path, [read, client_error(400)]):
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        # When the run fails on the second call
        assert execute_run(uow, Recorder(), run_id).status == "failed"
    # Then the tool round's call is billed on the failed run
    run = _run(engine, run_id)
    assert "HTTP 400" in run["error"]
    assert (run["usage"]["calls"], run["usage"]["tool_rounds"]) == (1, 1)
    assert float(run["cost_usd"]) == pytest.approx(_cost_of((11, 7)), abs=1e-6)
    # And its usage marks the failure as the agent's own (later rounds skip it)
    assert run["usage"]["failure"] == "permanent"


def test_calls_billed_before_a_transient_error_are_carried_to_the_next_attempt(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a priced model that reads evidence, then answers 500, then (asked again) answers
    monkeypatch.setenv("COUNCIL_INLINE_EVIDENCE_TOKENS", "0")
    ledger, heads = _thread(engine)
    answer = AgentOutput(claims=[ClaimOut(node_version_id=str(heads[0]), type="endorse")]).model_dump_json()
    script = [read_evidence(str(ledger.evidence[0])), server_error(), reply(answer, prompt_tokens=900)]
    with _priced_agent(monkeypatch, tmp_path, script):
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        # When the first attempt is cut off by the 500 after its tool round
        with pytest.raises(TransientLLMError, match="HTTP 500"):
            execute_run(uow, Recorder(), run_id)
        # Then the run, back in the queue, holds what that attempt was billed
        held = _run(engine, run_id)
        assert held["status"] == "queued" and held["usage"]["calls"] == 1
        assert float(held["cost_usd"]) == pytest.approx(_cost_of((11, 7)), abs=1e-6)
        # And when the retry succeeds, the run's cost counts both attempts' calls
        assert execute_run(uow, Recorder(), run_id, try_no=2).status == "succeeded"
    run = _run(engine, run_id)
    assert (run["attempt"], run["usage"]["calls"], run["usage"]["prompt_tokens"]) == (2, 2, 911)
    assert float(run["cost_usd"]) == pytest.approx(_cost_of((11, 7), (900, 7)), abs=1e-6)
