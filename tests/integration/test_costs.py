"""What runs cost (issue 35): an API run's tokens and litellm's price land on the run
(NULL, flagged ``unpriced``, for a model without a price), add up per thread in
`thread show`, and count in the Prometheus token and cost counters. Real Postgres, a
fake OpenAI-compatible provider."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine

from council import metrics
from council.adapters.scheduler import Recorder
from council.ledger.unit import UnitOfWork
from council.services.execution import execute_run
from council.services.threads import show_thread
from tests.conftest import CliRunner
from tests.dashboard import view_rows
from tests.fakes.openai_server import reply
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
    assert "120 prompt + 40 completion tokens; 1 run(s) unpriced" in human
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
