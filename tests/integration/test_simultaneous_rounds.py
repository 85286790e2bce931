"""A round is simultaneous (docs/architecture.md §7): every run of a round is shown the thread
as it stood when the round opened — the same propositions, the same evidence, the same
exposures — whatever order workers take its runs in, and even when the thread changes
while the round is under way. Run against real Postgres: each round's runs are executed
to completion one at a time (``execute_run`` in this process), in two opposite orders on
two fresh threads, with a new evidence item attached after the first run of each round."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.services.dispatch import dispatch, preview
from council.services.execution import execute_run
from tests.builders import ACTOR, Ledger
from tests.engines import uow_of
from tests.rows import query

AGENTS = ["claude", "codex", "glm"]
OWN = ("agent", "your_propositions")  # what a run's briefing holds of its own, beside the round's


def briefing_of(request: dict[str, Any]) -> dict[str, Any]:
    """The briefing a stored API request carries (its user message's one ```json block)."""
    [user] = [m["content"] for m in request["messages"] if m["role"] == "user"]
    found: dict[str, Any] = json.loads(user.split("```json\n", 1)[1].split("\n```", 1)[0])
    return found


def shared_part(request: dict[str, Any]) -> str:
    """The round's part of a run's stored request: its briefing less what is the run's own."""
    briefing = briefing_of(request)
    return json.dumps({k: v for k, v in briefing.items() if k not in OWN}, sort_keys=True)


def shown(engine: Engine, run_id: UUID) -> tuple[list[tuple[Any, ...]], str, Any]:
    """What a run was shown: its exposures, its request's shared part, its input features."""
    exposures = query(
        engine,
        "SELECT kind, channel, exposed_to_run_id, claim_id, node_version_id FROM run_exposures "
        "WHERE run_id = :r ORDER BY kind, channel, node_version_id, claim_id",
        r=run_id,
    )
    [run] = query(engine, "SELECT request, input_fingerprint FROM agent_runs WHERE id = :r", r=run_id)
    return [tuple(e.values()) for e in exposures], shared_part(run["request"]), run["input_fingerprint"]


@pytest.mark.parametrize(("mode", "rounds"), [("independent", 2), ("council", 0)])
def test_every_run_of_a_round_is_shown_the_same_thread_whatever_order_workers_take_them_in(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, mode: str, rounds: int
) -> None:
    monkeypatch.setenv("COUNCIL_SIMULATE", "always")
    for backwards in (False, True):
        # Given a fresh thread with one evidence item and no proposition yet, and a dispatch of
        # three agents (a council: it proposes, then cross-reviews; independent: two blind rounds)
        ledger = Ledger.new(engine, evidence_items=1)
        uow, scheduler = uow_of(engine), Recorder()
        previewed = preview(uow, ledger.thread_id, "claude", mode=mode)
        made = dispatch(uow, scheduler, ledger.thread_id, AGENTS, mode=mode, rounds=rounds, actor=ACTOR)
        assert made.rounds == 2
        for round_no in (1, 2):
            round_runs = scheduler.runs[(round_no - 1) * len(AGENTS) :]
            assert len(round_runs) == len(AGENTS), round_no
            # When its runs run to completion one at a time, in one order or the other, and a
            # person attaches new evidence after the first
            late = None
            for i, run in enumerate(reversed(round_runs) if backwards else round_runs):
                done = execute_run(uow, scheduler, run)
                assert done.status == "succeeded", done.error
                if i == 0:
                    late = ledger.add_evidence(f"attached while round {round_no} ran ({backwards})")
            # Then every run of the round was shown the same propositions, evidence and stances
            seen = [shown(engine, run) for run in round_runs]
            assert all(s[0] == seen[0][0] for s in seen), (mode, round_no, backwards, "exposures")
            assert all(s[1] == seen[0][1] for s in seen), (mode, round_no, backwards, "shared briefing")
            # (being told which propositions are its own is neither exposure nor run-specific input)
            assert all(s[2] == seen[0][2] for s in seen), (mode, round_no, backwards, "input features")
            # And what it was shown is the thread as it stood when the round opened: the evidence
            # attached while it ran is not in it (the next round is shown it)
            assert str(late) not in seen[0][1]
            propositions = [e for e in seen[0][0] if e[0] == "proposition"]
            if round_no == 1:
                assert propositions == []  # blind and simultaneous: nobody saw another's proposal
                # And the evidence, cited by nothing yet, reached every run; the preview made before
                # the dispatch is exactly what the first round's run of its agent stored
                assert str(ledger.evidence[0]) in seen[0][1]
                [claude] = query(engine, "SELECT request_sha256 FROM agent_runs WHERE dispatch_id = :d "
                                 "AND round = 1 AND agent = 'claude'", d=made.dispatch_id)  # fmt: skip
                assert claude["request_sha256"] == previewed.request_sha256
            else:
                assert str(ledger.evidence[1]) in seen[0][1]
                if mode == "council":
                    _cross_reviewed(engine, round_runs, propositions)


def _cross_reviewed(engine: Engine, runs: list[UUID], propositions: list[tuple[Any, ...]]) -> None:
    """In a council's cross-review every run was shown every agent's proposition, was told
    which was its own, and judged each of the others."""
    assert len(propositions) == len(AGENTS)  # one proposition each, in its own words
    for run in runs:
        [row] = query(engine, "SELECT request, parent_run_id FROM agent_runs WHERE id = :r", r=run)
        own = briefing_of(row["request"])["your_propositions"]
        made = query(
            engine, "SELECT id FROM node_versions WHERE created_by_run_id = :p", p=row["parent_run_id"]
        )
        assert own == [str(m["id"]) for m in made] and len(own) == 1
        judged = query(engine, "SELECT node_version_id FROM claims WHERE run_id = :r", r=run)
        others = {str(p[4]) for p in propositions} - set(own)
        assert {str(j["node_version_id"]) for j in judged} == others
