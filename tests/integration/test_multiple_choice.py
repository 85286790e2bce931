"""A multiple-choice question asked of simulated agents, against real Postgres (issue 43):
every briefing tells the agents its options are mutually exclusive, and each agent endorses
one option and disputes the others in every round, proposing nothing of its own. The runs
are executed in this process (``execute_run``), round after round."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.agents.compiler import RIVALS_GUIDE
from council.services.ask import Question, ask, outcome
from council.services.execution import execute_run
from tests.builders import ACTOR
from tests.engines import uow_of
from tests.rows import query, rows

AGENTS = ("claude", "codex", "glm")


def test_simulated_agents_pick_one_option_and_dispute_its_rivals(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COUNCIL_SIMULATE", "always")
    uow, scheduler = uow_of(engine), Recorder()
    # Given a multiple-choice question of three options, asked of three simulated agents
    asked = ask(
        uow,
        scheduler,
        Question(
            text="Which store should the adapter use?",
            agents=AGENTS,
            rounds=1,
            options=("A=SQLite", "B=Postgres", "C=DuckDB"),
        ),
        actor=ACTOR,
        simulate="always",
    )
    # When every round's runs run to completion
    done = 0
    while done < len(scheduler.runs):
        run = scheduler.runs[done]
        assert execute_run(uow, scheduler, run).status == "succeeded"
        done += 1
    assert done == len(AGENTS) * 3
    # Then every briefing said the options exclude one another
    requests = query(engine, "SELECT request FROM agent_runs WHERE thread_id = :t", t=asked.thread_id)
    users = [m["content"] for r in requests for m in r["request"]["messages"] if m["role"] == "user"]
    assert len(users) == len(requests) and all(RIVALS_GUIDE in u for u in users)
    # And no run proposed an answer of its own: beside the options, only refinements of one
    versions = rows(engine, "node_versions", "thread_id = :v", v=asked.thread_id)
    extra = [v["content"] for v in versions if v["id"] not in set(asked.options)]
    assert all(text.startswith("Refinement: ") for text in extra), extra
    # And in the blind rounds each run endorsed exactly one option and disputed the other two;
    # deliberating, a run may move with the council, but never endorses two
    claims = query(
        engine,
        "SELECT c.run_id, c.claim_type, r.round FROM claims c JOIN agent_runs r ON r.id = c.run_id "
        "WHERE r.thread_id = :t AND c.node_version_id = ANY(:options)",
        t=asked.thread_id,
        options=list(asked.options),
    )
    per_run: dict[tuple[object, int], Counter[str]] = {}
    for claim in claims:
        per_run.setdefault((claim["run_id"], claim["round"]), Counter())[claim["claim_type"]] += 1
    assert len(per_run) == len(AGENTS) * 3, per_run
    blind = [c for (_, round_no), c in per_run.items() if round_no < 3]
    assert blind and all(c == Counter({"endorse": 1, "dispute": 2}) for c in blind), blind
    assert all(c["endorse"] <= 1 for c in per_run.values()), per_run  # (a consolidated option is no head)
    # And the answer lists the options, rivals, with at most one established
    answer = outcome(
        uow,
        asked.thread_id,
        scheduler.dispatches[0] if hasattr(scheduler, "dispatches") else asked.dispatch.dispatch_id,
        settled=True,
    ).answer
    listed = [a for a in answer.alternatives if a.rival]
    assert len(listed) == (2 if answer.established else 3)
