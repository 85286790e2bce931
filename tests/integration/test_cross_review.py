"""The council's cross-review on real Postgres (docs/architecture.md §7): every run judges
every proposition it did not make, or the output check refuses its answer — one re-prompt
naming the versions it left out, then a failed run with that reason and nothing of it
written. Three models of three providers that think for themselves (local fake servers),
each round's runs executed in this process."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Literal

import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.ledger.unit import UnitOfWork
from council.services.dispatch import dispatch, dispatch_runs
from council.services.execution import execute_run
from tests.builders import ACTOR, Ledger
from tests.engines import uow_of
from tests.fakes.agent_model import Recorder as Requests
from tests.fakes.chat_model import chat_model, messages_model
from tests.fakes.minded_model import REPROMPT, Mind
from tests.rows import query

PROFILE = '[profiles.{name}]\nmodel = "{model}"\napi_key_env = ""\napi_base = "{url}"\n'


@contextmanager
def council_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, skips: Literal["once", "always"]
) -> Iterator[Requests]:
    """alpha (OpenAI chat) and beta (Anthropic Messages) hold yes; gamma (GLM on an
    OpenAI-compatible endpoint) holds no, and judges only the first proposition it is shown
    in the cross-review (``skips``). Yields gamma's server's record of requests."""
    with ExitStack() as stack:
        alpha, _ = stack.enter_context(chat_model(mind=Mind("yes", 0.9, 0)))
        beta, _ = stack.enter_context(messages_model(mind=Mind("yes", 0.8, 1)))
        gamma, seen = stack.enter_context(chat_model(mind=Mind("no", 0.7, 2, skips=skips)))
        profiles = tmp_path / "profiles.toml"
        profiles.write_text(
            PROFILE.format(name="alpha", model="openai/alpha-model", url=alpha)
            + PROFILE.format(name="beta", model="anthropic/claude-fake", url=beta)
            + PROFILE.format(name="gamma", model="openai/glm-4.6-fake", url=gamma),
            encoding="utf-8",
        )
        monkeypatch.setenv("COUNCIL_PROFILES", str(profiles))
        monkeypatch.setenv("COUNCIL_SIMULATE", "never")
        yield seen


def cross_review(engine: Engine) -> tuple[UnitOfWork, dict[str, dict[str, object]], list[str]]:
    """A council of the three on a fresh thread with evidence: its proposing round and its
    cross-review run to their ends. Returns the unit, each agent's round-2 run (as listed),
    and the three propositions."""
    ledger = Ledger.new(engine, evidence_items=1)
    uow, scheduler = uow_of(engine), Recorder()
    made = dispatch(uow, scheduler, ledger.thread_id, ["alpha", "beta", "gamma"], mode="council", rounds=0,
                    actor=ACTOR)  # fmt: skip
    for run in list(scheduler.runs):  # round 1, then round 2 (created when round 1 closed)
        execute_run(uow, scheduler, run)
    for run in scheduler.runs[3:]:
        execute_run(uow, scheduler, run)
    runs = {r.agent: r.json_document() for r in dispatch_runs(uow, made.dispatch_id) if r.round == 2}
    made_there = query(engine, "SELECT id FROM node_versions WHERE thread_id = :t", t=ledger.thread_id)
    propositions = [str(p["id"]) for p in made_there]
    return uow, runs, propositions


def test_a_reviewer_that_leaves_a_proposition_unjudged_is_told_which_and_judges_it(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with council_with(tmp_path, monkeypatch, "once") as seen:
        _, runs, propositions = cross_review(engine)
        calls = seen.model_calls()
    # Then gamma's cross-review, which judged only one of the two propositions it did not make,
    # was re-prompted once with the one it left out, and then judged both
    assert len(propositions) == 3
    gamma = runs["gamma"]
    assert gamma["status"] == "succeeded", gamma["error"]
    [reprompt] = [
        m["content"] for c in calls for m in c["json"]["messages"] if str(m["content"]).startswith(REPROMPT)
    ]
    assert "a cross-review judges every proposition it did not originate: 1 not judged" in reprompt
    judged = query(engine, "SELECT node_version_id, claim_type FROM claims WHERE run_id = :r", r=gamma["id"])
    own = query(engine, "SELECT v.id FROM node_versions v JOIN agent_runs r ON r.id = v.created_by_run_id "
                "WHERE r.agent = 'gamma'")  # fmt: skip
    assert str(own[0]["id"]) in propositions and str(own[0]["id"]) not in reprompt
    assert sorted(str(j["node_version_id"]) for j in judged) == sorted(
        set(propositions) - {str(own[0]["id"])}
    )
    assert {j["claim_type"] for j in judged} == {"dispute"}  # it reads both as yes; it holds no
    [usage] = query(engine, "SELECT usage FROM agent_runs WHERE id = :r", r=gamma["id"])
    assert usage["usage"]["reprompted"] is True and usage["usage"]["calls"] == 2


def test_a_reviewer_that_never_judges_them_all_fails_with_the_reason_and_writes_nothing(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with council_with(tmp_path, monkeypatch, "always"):
        _, runs, _ = cross_review(engine)
    # Then gamma's cross-review failed after its one re-prompt, saying why, with no claim written
    gamma = runs["gamma"]
    assert gamma["status"] == "failed"
    error = str(gamma["error"])
    assert error.startswith(
        "invalid output after one re-prompt: claims: a cross-review judges every proposition"
    )
    assert query(engine, "SELECT count(*) AS n FROM claims WHERE run_id = :r", r=gamma["id"])[0]["n"] == 0
    # And the two that judged everything succeeded
    assert runs["alpha"]["status"] == runs["beta"]["status"] == "succeeded"
