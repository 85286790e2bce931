"""An agent that cannot answer is not called again in its dispatch (issue 45): a run that
failed for good — a permanent error, or an endpoint that refused every try — marks its
agent down, and the same agent's runs of later rounds fail at their claim with
"skipped: AGENT failed in round R: REASON", with no request compiled or sent. A model
that answered, even wrongly, is asked again. Real Postgres; the model is a fake
OpenAI-compatible server over HTTP, the dead endpoint a port where nothing listens."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.agents.errors import UnreachableLLMError
from council.ledger.unit import UnitOfWork
from council.services.dispatch import dispatch
from council.services.execution import execute_run
from tests.conftest import free_port
from tests.fakes.openai_server import Recorder as Requests
from tests.fakes.openai_server import client_error, fake_openai, reply
from tests.integration.test_run_outcomes import (  # noqa: F401 (the autouse fixture)
    _offline_profile_env,
    _run,
    _thread,
    _valid_output,
)
from tests.rows import query

PROFILE = '[profiles.{name}]\nmodel = "openai/{name}-model"\napi_key_env = ""\napi_base = "{url}"\n'


def _profiles(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **urls: str) -> None:
    path = tmp_path / "profiles.toml"
    path.write_text("\n".join(PROFILE.format(name=n, url=u) for n, u in urls.items()), encoding="utf-8")
    monkeypatch.setenv("COUNCIL_PROFILES", str(path))
    monkeypatch.setenv("COUNCIL_SIMULATE", "never")


def _runs(engine: Engine, dispatch_id: UUID) -> dict[tuple[str, int], UUID]:
    from tests.engines import unit_of_work

    with unit_of_work(engine) as conn:
        found = query(conn, "SELECT id, agent, round FROM agent_runs WHERE dispatch_id = :d", d=dispatch_id)
    return {(r["agent"], r["round"]): r["id"] for r in found}


def test_an_agent_whose_endpoint_refused_every_try_is_skipped_in_later_rounds(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a deliberative dispatch of three rounds: one agent answers, the other's port has
    # nothing listening
    ledger, heads = _thread(engine)
    port = free_port()
    answer = _valid_output(ledger, heads).model_dump_json()
    with fake_openai([reply(answer)]) as (url, seen):
        _profiles(monkeypatch, tmp_path, alive=url, dead=f"http://127.0.0.1:{port}/v1")
        scheduler = Recorder()
        made = dispatch(uow, scheduler, ledger.thread_id, ["alive", "dead"], mode="deliberative", rounds=3,
                        actor="test")  # fmt: skip
        first = _runs(engine, made.dispatch_id)
        # When the dead agent's round-1 run refuses the connection on each of its five tries
        for try_no in range(1, 5):
            with pytest.raises(UnreachableLLMError, match=rf"cannot connect to 127\.0\.0\.1:{port}"):
                execute_run(uow, scheduler, first["dead", 1], try_no=try_no)
        failed = execute_run(uow, scheduler, first["dead", 1], try_no=5, last_try=True)
        assert execute_run(uow, scheduler, first["alive", 1]).status == "succeeded"
        # Then it failed naming the endpoint's host and port, and its agent is marked down
        dead = _run(engine, first["dead", 1])
        assert failed.status == "failed"
        refused = f"openai/dead-model: cannot connect to 127.0.0.1:{port}: connection refused"
        assert dead["error"] == f"no answer after 5 tries: {refused}"
        assert (dead["usage"]["failure"], dead["usage"]["unreachable_tries"], dead["usage"]["calls"]) == (
            "unreachable", 5, 0,
        )  # fmt: skip
        assert float(dead["cost_usd"]) == 0  # nothing was billed
        # And when round 2 opens, the dead agent's run fails at once, without a call, naming round 1
        second = _runs(engine, made.dispatch_id)
        skipped = execute_run(uow, scheduler, second["dead", 2])
        assert skipped.status == "failed"
        run = _run(engine, second["dead", 2])
        assert run["error"] == f"skipped: dead failed in round 1: {dead['error']}"
        assert run["request_sha256"] is None  # nothing compiled, nothing sent
        assert run["usage"] is None and run["cost_usd"] is None
        # And the living agent still runs in round 2, and round 3 skips the dead agent naming round 1
        assert execute_run(uow, scheduler, second["alive", 2]).status == "succeeded"
        third = _runs(engine, made.dispatch_id)
        assert execute_run(uow, scheduler, third["dead", 3]).status == "failed"
        assert _run(engine, third["dead", 3])["error"] == f"skipped: dead failed in round 1: {dead['error']}"
        assert execute_run(uow, scheduler, third["alive", 3]).status == "succeeded"
    assert len(seen.requests) == 3  # the living agent, once a round


def test_a_permanent_error_marks_the_agent_down_and_invalid_output_does_not(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given two agents in a two-round dispatch: one is refused by its provider (HTTP 404), the
    # other answers prose that is no valid output, twice
    ledger, heads = _thread(engine)
    answer = _valid_output(ledger, heads).model_dump_json()
    requests: dict[str, Requests] = {}
    with (
        fake_openai([client_error(404)]) as (refused, requests["refused"]),
        fake_openai([reply("not JSON"), reply("not JSON"), reply(answer)]) as (
            babbling,
            requests["babbling"],
        ),
    ):
        _profiles(monkeypatch, tmp_path, refused=refused, babbling=babbling)
        scheduler = Recorder()
        agents = ["refused", "babbling"]
        made = dispatch(uow, scheduler, ledger.thread_id, agents, mode="deliberative", rounds=2, actor="test")
        first = _runs(engine, made.dispatch_id)
        # When both fail in round 1
        assert execute_run(uow, scheduler, first["refused", 1]).status == "failed"
        assert execute_run(uow, scheduler, first["babbling", 1]).status == "failed"
        # Then in round 2 the refused agent is skipped, and the babbling one is asked again (and answers)
        second = _runs(engine, made.dispatch_id)
        assert execute_run(uow, scheduler, second["refused", 2]).status == "failed"
        error = _run(engine, second["refused", 2])["error"]
        assert (
            error.startswith("skipped: refused failed in round 1: openai/refused-model: ") and "404" in error
        )
        assert execute_run(uow, scheduler, second["babbling", 2]).status == "succeeded"
    assert _run(engine, first["refused", 1])["usage"]["failure"] == "permanent"
    assert "failure" not in _run(engine, first["babbling", 1])["usage"]
    assert len(requests["refused"].requests) == 1 and len(requests["babbling"].requests) == 3
