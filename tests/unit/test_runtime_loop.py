"""The one loop of every runtime (``council.services.execution.converse_and_apply``), on a
scripted runtime (``tests.fakes.runtime``) and a fake unit of work: whatever the runtime,
an invalid answer is re-prompted once, what was billed is stored with a failed run, and
an agent that failed for good is skipped, without a call, in the later rounds of its
dispatch. The ledger's side of each is tested on real Postgres (tests/integration)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast
from uuid import UUID, uuid4

import pytest

from council.adapters.scheduler import Recorder
from council.agents.errors import PermanentLLMError
from council.agents.runtime import Runtime
from council.domain.bill import FAILURES
from council.domain.profile import Profile
from council.domain.requests import StoredRequest
from council.domain.results.runs import Applied
from council.ledger.run_phases import Begun, Ended
from council.ledger.run_rows import AgentDown, ClaimedRun, FencedRun
from council.services import execution, run_calls
from tests.fakes.runs import claimed
from tests.fakes.runtime import COST_USD, ScriptedRuntime
from tests.fakes.uow import FakeUnitOfWork

PROFILE = Profile(name="alpha", model="council-sim/alpha", provider="council-sim", simulated=True)
REQUEST = cast(StoredRequest, {"model": PROFILE.model, "messages": [], "params": {}})
VALID = '{"summary": "nothing to add"}'


@dataclass
class FakeRuns:
    """The runs store of a dispatch's runs of one agent: the claim says whether the agent
    failed for good in an earlier round (``agent_down``), as the ledger's claim does."""

    runs: dict[UUID, ClaimedRun]
    finished: dict[UUID, dict[str, Any]] = field(default_factory=dict)
    kept: list[tuple[int, str]] = field(default_factory=list)

    def begin(
        self,
        run_id: UUID,
        *,
        owner: str,
        lease_s: float,
        held_attempt: int | None = None,
        api_runtimes: Sequence[str] = (),
    ) -> Begun:
        """As the ledger's ``council_begin_run_v1``: the claim, with no stored briefing."""
        run = self.runs[run_id]
        down = [f for f in self.finished.values() if (f["usage"] or {}).get("failure") in FAILURES]
        if down:
            agent_down = AgentDown(round=down[0]["round"], error=down[0]["error"])
            run = claimed(**{**_fields(run), "agent_down": agent_down})
        return Begun(state="claimed", run=run)

    def end(
        self,
        run_id: UUID,
        attempt: int,
        *,
        answer: tuple[int, str] | None,
        versions: Sequence[UUID],
        evidence: Sequence[UUID],
    ) -> Ended:
        """As the ledger's ``council_end_run_v1``: the answer kept, the run fenced."""
        if answer is not None:
            return Ended(run=self.fence_keeping(run_id, attempt, *answer))
        return Ended(run=self.fence(run_id, attempt))

    def fence(self, run_id: UUID, attempt: int) -> FencedRun:
        run = self.runs[run_id]
        return FencedRun(
            run.id, attempt, run.thread_id, run.dispatch_id, run.round, run.agent, run.mode, None, None
        )

    def fence_keeping(self, run_id: UUID, attempt: int, round_no: int, text: str) -> FencedRun:
        self.kept.append((round_no, text))
        return self.fence(run_id, attempt)

    def finish(self, run: FencedRun, attempt: int, **ended: Any) -> None:
        self.finished[run.id] = {"round": run.round, **ended}

    def closed_round_versions(self, dispatch_id: UUID, round_no: int) -> None:
        return None  # the round is still open: its close decides its versions


@dataclass
class FakeAnswers:
    kept: list[tuple[int, str]] = field(default_factory=list)

    def keep(self, run_id: UUID, attempt: int, round_no: int, text: str) -> str:
        self.kept.append((round_no, text))
        return "sha"


class FakeTraces:
    def record(self, run_id: UUID, attempt: int, traces: Any, opened: Any) -> None:
        pass


def _fields(run: ClaimedRun) -> dict[str, Any]:
    return {name: getattr(run, name) for name in ClaimedRun.__dataclass_fields__}


def _run(round_no: int = 1, dispatch_id: UUID | None = None) -> ClaimedRun:
    rounds = None if dispatch_id is None else 2
    return claimed(
        dispatch_id,
        "independent",
        round=round_no,
        dispatch_rounds=rounds,
        executor=PROFILE.pinned(),
        request=REQUEST,
    )


@pytest.fixture
def uses(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run through the scripted runtime, its answer applied without a ledger."""

    def use(runtime: Runtime) -> None:
        monkeypatch.setattr(execution, "runtime_for", lambda name: runtime)

    applied = Applied(claims=[], nodes=[], versions=[], evidence=[], forks=[], pending_actions=[],
                      touched_versions=[])  # fmt: skip
    monkeypatch.setattr(run_calls, "apply_checked", lambda *a, **k: (applied, None))
    return use


def test_an_invalid_answer_is_re_prompted_once_with_its_reason_then_applied(uses: Any) -> None:
    # Given a runtime whose first answer is not JSON and whose second is a valid output
    runtime = ScriptedRuntime(["I think it holds.", VALID])
    uses(runtime)
    run = _run()
    runs, answers = FakeRuns({run.id: run}), FakeAnswers()
    uow = FakeUnitOfWork(runs=runs, answers=answers, traces=FakeTraces())
    # When the run is executed
    done = execution.execute_run(uow, Recorder(), run.id)
    # Then the runtime was asked twice, the second time with the refused answer and why
    assert done.status == "succeeded"
    assert [a.reprompt is None for a in runtime.asked] == [True, False]
    reprompt = runtime.asked[1].reprompt
    assert reprompt is not None and reprompt.answer.text == "I think it holds." and "JSON" in reprompt.reason
    # and both answers are kept: the refused one on its own, the applied one by its apply
    assert answers.kept == [(0, "I think it holds.")] and runs.kept == [(1, VALID)]


def test_a_run_refused_after_its_re_prompt_fails_with_both_calls_billed(uses: Any) -> None:
    # Given a runtime that answers prose twice
    runtime = ScriptedRuntime(["prose", "prose again", VALID])
    uses(runtime)
    run = _run()
    runs = FakeRuns({run.id: run})
    uow = FakeUnitOfWork(runs=runs, answers=FakeAnswers(), traces=FakeTraces())
    # When the run is executed
    done = execution.execute_run(uow, Recorder(), run.id)
    # Then it fails after exactly one re-prompt (the third answer is never asked for)
    assert done.status == "failed"
    assert len(runtime.asked) == 2 and runtime.script == [VALID]
    ended = runs.finished[run.id]
    assert ended["status"] == "failed" and ended["error"].startswith("invalid output after one re-prompt")
    # and what both calls were billed is stored with the failed run
    assert ended["cost_usd"] == pytest.approx(2 * COST_USD)
    assert ended["usage"]["calls"] == 2 and ended["usage"]["reprompted"] is True
    assert ended["usage"]["prompt_tokens"] == 200


def test_an_agent_refused_for_good_is_skipped_without_a_call_in_its_later_rounds(uses: Any) -> None:
    # Given a dispatch's round-1 run whose provider refuses the request for good
    dispatch = uuid4()
    first, second = _run(1, dispatch), _run(2, dispatch)
    runtime = ScriptedRuntime([PermanentLLMError("alpha: HTTP 401 invalid key"), VALID])
    uses(runtime)
    runs = FakeRuns({first.id: first, second.id: second})
    uow = FakeUnitOfWork(runs=runs, answers=FakeAnswers(), traces=FakeTraces())
    scheduler = Recorder()
    # When round 1's run is executed, then round 2's
    failed = execution.execute_run(uow, scheduler, first.id)
    skipped = execution.execute_run(uow, scheduler, second.id)
    # Then the first fails with the reason and marks its agent down for the dispatch
    assert failed.status == "failed" and runs.finished[first.id]["usage"]["failure"] == "permanent"
    # and the second fails at its claim, without asking the runtime, naming the round and reason
    assert len(runtime.asked) == 1
    assert skipped.status == "failed"
    assert skipped.error == "skipped: alpha failed in round 1: alpha: HTTP 401 invalid key"
    assert runs.finished[second.id]["usage"] is None  # nothing billed, and not itself a cause
