"""The services' orchestration, on a fake unit of work (no Postgres): which
transaction does what, what reaches the scheduler and when, what is retried.
The ledger's own correctness is tested against real Postgres elsewhere."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid4

import pytest

from council.adapters.scheduler import Recorder
from council.domain.results.consolidation import Evaluated
from council.domain.results.reversal import CascadeStep
from council.errors import CouncilError, Duplicate, TransientDatabaseError
from council.services import consolidation, dispatch, execution, reversal, rounds, run_followups
from council.services.in_tx import dispatching, round_opening
from tests.fakes.runs import claimed
from tests.fakes.uow import FakeUnitOfWork

# ------------------------------------------------------------------ dispatch


@dataclass
class FakeRuns:
    existing: UUID | None = None  # a review already dispatched for the proposal
    created: list[UUID] = field(default_factory=list)
    queued: list[UUID] = field(default_factory=list)

    def create_dispatch(self, **kw: Any) -> tuple[UUID, list[UUID], bool]:
        if self.existing is not None:
            return self.existing, [], True
        self.created = [uuid4() for _ in kw["profiles"]]
        return uuid4(), self.created, False

    def mark_queued(self, run_ids: list[UUID]) -> None:
        self.queued.extend(run_ids)


@dataclass
class FakeRounds:
    """The rounds' shared briefings, as stored (dispatch, round)."""

    stored: list[tuple[UUID, int]] = field(default_factory=list)

    def store(self, dispatch_id: UUID, round_no: int, briefing: object) -> bool:
        self.stored.append((dispatch_id, round_no))
        return True


@pytest.fixture
def briefed(monkeypatch: pytest.MonkeyPatch) -> list[UUID]:
    """The first round's shared briefing compiled without a ledger (the threads it was read for)."""
    read: list[UUID] = []

    def briefing(tx: object, thread_id: UUID, **kw: Any) -> object:
        read.append(thread_id)
        return object()

    monkeypatch.setattr(dispatching, "round_briefing", briefing)
    return read


class OrderedRecorder(Recorder):
    """Notes what the runs store had marked queued when each enqueue arrived."""

    def __init__(self, runs: FakeRuns) -> None:
        super().__init__()
        self._runs = runs
        self.queued_when_enqueued: list[list[UUID]] = []

    def enqueue_runs(self, run_ids: Any) -> None:
        self.queued_when_enqueued.append(list(self._runs.queued))
        super().enqueue_runs(run_ids)


def test_dispatch_commits_the_runs_before_it_enqueues_them(
    monkeypatch: pytest.MonkeyPatch, briefed: list[UUID]
) -> None:
    # Given a fake ledger and a scheduler that notes what was queued when it was asked
    monkeypatch.setenv("COUNCIL_SIMULATE", "always")
    runs, opened = FakeRuns(), FakeRounds()
    uow = FakeUnitOfWork(runs=runs, rounds=opened)
    scheduler = OrderedRecorder(runs)

    # When a council of three is dispatched
    thread = uuid4()
    made = dispatch.dispatch(uow, scheduler, thread, ["claude", "codex", "glm"], mode="independent",
                             rounds=1, actor="test")  # fmt: skip

    # Then the runs were created, and their first round opened (its shared briefing read and
    # stored), in one committed transaction, and marked queued in a second, both before
    # anything was enqueued; the scheduler got exactly those runs
    assert [calls for calls in uow.committed] == [
        ["resolve thread", "runs.create_dispatch", "rounds.store"],
        ["runs.mark_queued"],
    ]
    assert briefed == [thread] and opened.stored == [(made.dispatch_id, 1)]
    assert scheduler.runs == runs.created == made.run_ids
    assert scheduler.queued_when_enqueued == [runs.created]
    assert made.simulated == ["claude", "codex", "glm"]


def test_a_review_already_dispatched_enqueues_nothing(
    monkeypatch: pytest.MonkeyPatch, briefed: list[UUID]
) -> None:
    monkeypatch.setenv("COUNCIL_SIMULATE", "always")
    earlier = uuid4()
    opened = FakeRounds()
    uow = FakeUnitOfWork(runs=FakeRuns(existing=earlier), rounds=opened)
    scheduler = Recorder()

    made = dispatch.dispatch(uow, scheduler, uuid4(), ["claude"], mode="review", rounds=1, actor="test",
                             proposal=uuid4(), once_per_proposal=True)  # fmt: skip

    assert made.already_dispatched and made.dispatch_id == earlier and made.run_ids == []
    assert scheduler.runs == [] and len(uow.log) == 1  # no second transaction either
    assert opened.stored == []  # and no round opened again


# ------------------------------------------------------------- consolidation


class FlakyCommitter:
    """Fails ``failures`` times with ``error``, then decides every version not ready
    (every node lock free: the first pass, ``try``, answers them all)."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures, self.error, self.calls = failures, error, 0

    def decide(
        self, version_ids: list[UUID], *, actor: str, dry_run: bool, wait: str = "exclusive"
    ) -> dict[UUID, Evaluated]:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return {v: _evaluated(v, dry_run) for v in version_ids}


def _evaluated(version_id: UUID, dry_run: bool) -> Evaluated:
    return Evaluated(
        node_version_id=version_id, logical_node_id=uuid4(), thread_id=uuid4(), dry_run=dry_run,
        snapshot_sha256="0" * 64, outcome="not_ready", consolidation_id=None, reasons=[],
    )  # fmt: skip


@pytest.mark.parametrize("error", [TransientDatabaseError("deadlock"), Duplicate("another committer won")])
def test_a_committer_transaction_that_loses_a_race_is_retried_whole(
    error: Exception, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consolidation.time, "sleep", lambda _s: None)
    committer = FlakyCommitter(failures=2, error=error)
    uow = FakeUnitOfWork(committer=committer)
    version = uuid4()

    result = consolidation.consolidate(uow, version, actor="test")

    assert result.node_version_id == version and committer.calls == 3
    # (a whole version id needs no transaction to resolve it)
    assert [outcome for outcome, _ in uow.log] == ["rolled back", "rolled back", "committed"]


def test_a_committer_that_keeps_losing_gives_up_after_the_policy_s_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(consolidation.time, "sleep", lambda _s: None)
    committer = FlakyCommitter(failures=100, error=TransientDatabaseError("lock timeout"))

    with pytest.raises(TransientDatabaseError):
        consolidation.consolidate(FakeUnitOfWork(committer=committer), uuid4(), actor="test")

    assert committer.calls == consolidation.COMMIT_RETRY.max_retries + 1


def test_a_dry_run_is_decided_in_a_transaction_that_is_rolled_back() -> None:
    uow = FakeUnitOfWork(committer=FlakyCommitter(failures=0, error=RuntimeError()))

    result = consolidation.consolidate(uow, uuid4(), actor="test", dry_run=True)

    assert result.dry_run and [outcome for outcome, _ in uow.log] == ["rolled back"]


# ------------------------------------------------------------------- cascade


@dataclass
class FakeCascades:
    steps: list[CascadeStep]  # what each successive step reports
    taken: list[list[UUID]] = field(default_factory=list)

    def step(self, continuation_ids: list[UUID], *, actor: str) -> CascadeStep:
        self.taken.append(list(continuation_ids))
        return self.steps[len(self.taken) - 1]


def _step(reached: int, continuation_id: UUID | None) -> CascadeStep:
    return CascadeStep(
        continued=[],
        reached=reached,
        marked_provisional=reached,
        continuation=[],
        continuation_id=continuation_id,
    )


def test_what_a_cascade_step_cuts_off_is_handed_to_the_scheduler() -> None:
    left = uuid4()
    cascades = FakeCascades([_step(200, left)])
    scheduler = Recorder()

    hand_on = reversal.continue_cascade(FakeUnitOfWork(cascades=cascades), scheduler, [uuid4()])

    assert hand_on.continuation_queued and hand_on.steps == 1 and scheduler.cascades == [[left]]


def test_without_a_scheduler_the_cascade_continues_a_transaction_a_step() -> None:
    first, second = uuid4(), uuid4()
    cascades = FakeCascades([_step(200, first), _step(200, second), _step(3, None)])
    uow = FakeUnitOfWork(cascades=cascades)

    hand_on = reversal.continue_cascade(uow, None, [uuid4()])

    assert hand_on.steps == 3 and hand_on.reached == 403 and not hand_on.continuation_queued
    assert cascades.taken[1:] == [[first], [second]]
    assert uow.committed == [["cascades.step"]] * 3


# --------------------------------------------------------- after a run ends


@dataclass
class FakeDispatchRuns:
    following: list[UUID]
    statuses: list[str]
    queued: list[UUID] = field(default_factory=list)
    quorum: list[UUID] = field(default_factory=list)
    quorum_asked: int = 0
    closed: list[UUID] | None = field(default_factory=list)  # the round's versions; None: still open
    next_round_asked: int = 0

    def quorum_versions(self, run_id: UUID) -> list[UUID]:
        self.quorum_asked += 1
        return self.quorum  # versions whose council (min_council_answered) the run sat on

    def closed_round_versions(self, dispatch_id: UUID, round_no: int) -> list[UUID] | None:
        return self.closed

    def next_round(self, dispatch_id: UUID, round_no: int) -> list[UUID]:
        self.next_round_asked += 1
        return self.following

    def mark_queued(self, run_ids: list[UUID]) -> None:
        self.queued.extend(run_ids)

    def of_dispatch(self, dispatch_id: UUID) -> list[Any]:
        return [type("R", (), {"status": s})() for s in self.statuses]


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[UUID, int]]:
    """The rounds opened (their shared briefings compiled and stored), without a ledger."""
    found: list[tuple[UUID, int]] = []
    monkeypatch.setattr(
        round_opening, "open_round", lambda tx, dispatch_id, round_no: found.append((dispatch_id, round_no))
    )
    return found


def test_a_run_outside_a_dispatch_has_its_versions_evaluated_at_once() -> None:
    scheduler = Recorder()
    touched = [uuid4(), uuid4()]
    done = execution.Executed(run_id=uuid4(), status="succeeded", touched_versions=touched)

    after = run_followups.follow_up(FakeUnitOfWork(), scheduler, claimed(None, "external"), done)

    assert scheduler.evaluations == touched and scheduler.runs == [] and after.next_round_runs == []


def test_a_dispatched_run_leaves_its_versions_to_its_rounds_close_and_enqueues_the_next_round(
    opened: list[tuple[UUID, int]],
) -> None:
    # Given the run that closed round 1 of 2, whose round claimed on nothing
    following = [uuid4(), uuid4()]
    runs = FakeDispatchRuns(following, ["succeeded"])
    scheduler = Recorder()
    done = execution.Executed(run_id=uuid4(), status="succeeded", touched_versions=[uuid4()])
    # When its end is handled
    run = claimed(uuid4(), "deliberative", round=1, dispatch_rounds=2)
    after = run_followups.follow_up(FakeUnitOfWork(runs=runs), scheduler, run, done)
    # Then its own versions are not sent on their own (the round's close decides them), and
    # the next round is created, opened and enqueued
    assert scheduler.evaluations == [] and scheduler.runs == following == runs.queued
    assert after.next_round_runs == following and after.adjudication is None
    assert opened == [(run.dispatch_id, 2)]


def test_a_run_that_finds_its_round_open_asks_for_no_next_round() -> None:
    # Given a run of round 1 of 2 whose round still has a run going
    runs = FakeDispatchRuns([uuid4()], ["succeeded", "running"], closed=None)
    scheduler = Recorder()
    done = execution.Executed(run_id=uuid4(), status="succeeded", touched_versions=[uuid4()])
    # When its end is handled
    run = claimed(uuid4(), "deliberative", round=1, dispatch_rounds=2)
    after = run_followups.follow_up(FakeUnitOfWork(runs=runs), scheduler, run, done)
    # Then nothing is created, enqueued or evaluated: the run that closes the round does that
    assert runs.next_round_asked == 0 and after.next_round_runs == []
    assert scheduler.runs == [] and scheduler.evaluations == []


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "still-open"])
def test_the_run_that_closes_the_last_round_sends_the_rounds_versions_once(closed: bool) -> None:
    # Given a run of a dispatch's last round, and the versions its round claimed on or made
    round_versions = [uuid4(), uuid4(), uuid4()]
    runs = FakeDispatchRuns([], ["succeeded"], closed=round_versions if closed else None)
    scheduler = Recorder()
    done = execution.Executed(run_id=uuid4(), status="succeeded", touched_versions=round_versions[:1])
    # When its end is handled
    run = claimed(uuid4(), "deliberative", round=2, dispatch_rounds=2)
    run_followups.follow_up(FakeUnitOfWork(runs=runs), scheduler, run, done)
    # Then the round's versions go to the commit queue when it has closed, and nothing before
    assert scheduler.evaluations == (round_versions if closed else [])
    assert scheduler.runs == []


@pytest.mark.parametrize(("mode", "closing", "decided"), [("council", 1, False), ("council", 2, True),
                                                        ("deliberative", 1, True)])  # fmt: skip
def test_a_council_s_proposing_round_decides_nothing_and_its_cross_review_decides(
    monkeypatch: pytest.MonkeyPatch, opened: list[tuple[UUID, int]], mode: str, closing: int, decided: bool
) -> None:
    # Given the run that closes round `closing` of a dispatch of 4 rounds, whose round made
    # or claimed on two versions
    round_versions = [uuid4(), uuid4()]
    following = [uuid4()]
    runs = FakeDispatchRuns(following, ["succeeded"], closed=round_versions)
    asked: list[list[UUID]] = []
    monkeypatch.setattr(rounds, "consolidate_many", lambda uow, versions, actor: asked.append(list(versions)))
    # When its end is handled
    run = claimed(uuid4(), mode, round=closing, dispatch_rounds=4)
    run_followups.follow_up(FakeUnitOfWork(runs=runs), Recorder(), run, execution.Executed(
        run_id=run.id, status="succeeded"))  # fmt: skip
    # Then the round's versions are decided before the next round opens, except at the close
    # of a council's proposing round (each of its propositions is judged in the cross-review)
    assert asked == ([round_versions] if decided else [])
    assert opened == [(run.dispatch_id, closing + 1)] and runs.queued == following


def test_a_round_the_runs_worker_fails_to_decide_goes_to_the_commit_queue(
    monkeypatch: pytest.MonkeyPatch, opened: list[tuple[UUID, int]]
) -> None:
    # Given round 1 of 2 closed with two versions, and a committer that fails
    round_versions = [uuid4(), uuid4()]
    following = [uuid4()]
    runs = FakeDispatchRuns(following, ["succeeded"], closed=round_versions)

    def fail(*_args: Any, **_kwargs: Any) -> None:
        raise CouncilError("the database went away")

    monkeypatch.setattr(rounds, "consolidate_many", fail)
    scheduler = Recorder()
    done = execution.Executed(run_id=uuid4(), status="failed", error="refused")  # it touched nothing
    # When the run that closed it ends
    run = claimed(uuid4(), "deliberative", round=1, dispatch_rounds=2)
    run_followups.follow_up(FakeUnitOfWork(runs=runs), scheduler, run, done)
    # Then the commit queue decides the round's versions, and the next round is still created
    assert scheduler.evaluations == round_versions and scheduler.runs == following


def test_a_failed_run_of_a_dispatch_re_evaluates_the_versions_of_its_council() -> None:
    # Given a dispatched run that failed (it claimed on nothing) and sat on two versions' council
    council = [uuid4(), uuid4()]
    runs = FakeDispatchRuns([], ["failed"], quorum=council)
    scheduler = Recorder()
    failed = execution.Executed(run_id=uuid4(), status="failed", error="refused")
    # When its end is handled
    run_followups.follow_up(
        FakeUnitOfWork(runs=runs), scheduler, claimed(uuid4(), "independent", quorum_rule=True), failed
    )
    # Then both versions are evaluated again: their quorum changed
    assert scheduler.evaluations == council


def test_a_run_under_a_rule_set_without_a_quorum_rule_asks_nothing_of_its_council() -> None:
    # Given a dispatched run that failed, on a thread whose rule set has no min_council_answered
    runs = FakeDispatchRuns([], ["failed"], quorum=[uuid4()])
    scheduler = Recorder()
    failed = execution.Executed(run_id=uuid4(), status="failed", error="refused")
    # When its end is handled
    run_followups.follow_up(FakeUnitOfWork(runs=runs), scheduler, claimed(uuid4(), "independent"), failed)
    # Then no transaction looks for its council's versions, and none is evaluated
    assert runs.quorum_asked == 0 and scheduler.evaluations == []


def test_the_last_review_run_to_end_adjudicates_and_an_earlier_one_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    adjudicated: list[UUID] = []

    def adjudicate(_uow: Any, proposal: UUID, *, actor: str) -> Any:
        adjudicated.append(proposal)
        return type("A", (), {"outcome": "retracted", "rivals_due": []})()

    monkeypatch.setattr(run_followups, "adjudicate_if_automatic", adjudicate)
    proposal = uuid4()
    run = claimed(uuid4(), "review", proposal_id=proposal)
    done = execution.Executed(run_id=uuid4(), status="succeeded")

    still_running = FakeDispatchRuns([], ["succeeded", "running"])
    follow_up = run_followups.follow_up
    assert follow_up(FakeUnitOfWork(runs=still_running), Recorder(), run, done).adjudication is None
    all_ended = FakeDispatchRuns([], ["succeeded", "failed"])
    assert follow_up(FakeUnitOfWork(runs=all_ended), Recorder(), run, done).adjudication == "retracted"
    assert adjudicated == [proposal]
