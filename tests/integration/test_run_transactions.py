"""How many transactions a run takes (issue 36 part 3), and that the fewer still keep every
answer: the answer is kept by the check-and-apply transaction's first statement, in its own
transaction when that one rolls back, and by a zombie attempt too. Real Postgres; the model
is the fake OpenAI server over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.domain.bill import Bill
from council.errors import Conflict
from council.ledger.unit import UnitOfWork
from council.services import run_calls
from council.services.execution import execute_run
from council.services.runs import show_run
from tests.fakes.openai_server import reply
from tests.integration.test_run_outcomes import (  # noqa: F401  (the autouse profile fixture)
    _dispatch,
    _fake_agent,
    _offline_profile_env,
    _thread,
    _valid_output,
)


@contextmanager
def _commits() -> Iterator[list[str]]:
    """Every COMMIT psycopg sends meanwhile (any connection of this process)."""
    seen: list[str] = []
    commit = psycopg.Connection.commit

    def counted(self: Any) -> None:
        if self.pgconn.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            seen.append("commit")
        commit(self)

    psycopg.Connection.commit = counted  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        psycopg.Connection.commit = commit  # type: ignore[method-assign]


def test_a_one_round_api_run_is_two_transactions_and_keeps_its_answer(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a provider that answers a valid output at once, to a dispatch of one run
    ledger, heads = _thread(engine)
    answer = _valid_output(ledger, heads).model_dump_json()
    with _fake_agent(monkeypatch, tmp_path, [reply(answer)]):
        run_id = _dispatch(uow, Recorder(), ledger.thread_id)
        # When the run is executed
        scheduler = Recorder()
        with _commits() as commits:
            assert execute_run(uow, scheduler, run_id).status == "succeeded"
    # Then it took two transactions (claim with its stored request; keep, check, apply and
    # ask whether its round closed): it had, so the round's versions (what the run claimed
    # on) were sent to be evaluated, once, with no transaction of their own
    assert len(commits) == 2
    assert sorted(scheduler.evaluations) == sorted(heads)
    shown = show_run(uow, run_id)
    assert [(a.attempt, a.round, a.text) for a in shown.answers] == [(1, 0, answer)]


def test_a_zombie_attempts_answer_is_kept_though_it_writes_nothing_else(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a run whose first attempt's lease was taken over by a second
    monkeypatch.setenv("COUNCIL_SIMULATE", "1")
    ledger, heads = _thread(engine)
    run_id = _dispatch(uow, Recorder(), ledger.thread_id, agent="claude")
    with uow() as tx:
        assert tx.runs.begin(run_id, owner="zombie", lease_s=0).run is not None
    with uow() as tx:
        assert tx.runs.begin(run_id, owner="successor", lease_s=300).run is not None
    # When the zombie applies what its model answered
    output = _valid_output(ledger, heads)
    text = output.model_dump_json()
    applied = run_calls.apply_answer(uow, run_id, 1, output, bill=Bill({"calls": 1}, None), answer=(0, text))
    # Then it is fenced out, its answer kept under its own attempt, and the run untouched
    assert applied is None
    shown = show_run(uow, run_id)
    assert [(a.attempt, a.round, a.text) for a in shown.answers] == [(1, 0, text)]
    assert (shown.status, shown.claims) == ("running", [])


def test_an_answer_whose_apply_transaction_rolls_back_is_kept_all_the_same(
    engine: Engine, uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a claimed run whose apply fails inside its transaction for a reason of the ledger's
    monkeypatch.setenv("COUNCIL_SIMULATE", "1")
    ledger, heads = _thread(engine)
    run_id: UUID = _dispatch(uow, Recorder(), ledger.thread_id, agent="claude")
    with uow() as tx:
        assert tx.runs.begin(run_id, owner="worker", lease_s=300).run is not None

    def conflicting(*_: Any, **__: Any) -> Any:
        raise Conflict("the ledger moved under the apply")

    monkeypatch.setattr(run_calls, "apply_checked", conflicting)
    output = _valid_output(ledger, heads)
    text = output.model_dump_json()
    # When the apply is tried, it fails as it did
    with pytest.raises(Conflict):
        run_calls.apply_answer(uow, run_id, 1, output, bill=Bill({"calls": 1}, None), answer=(0, text))
    # And the answer was kept in a transaction of its own; nothing else was written
    shown = show_run(uow, run_id)
    assert [(a.attempt, a.round, a.text) for a in shown.answers] == [(1, 0, text)]
    assert (shown.status, shown.claims) == ("running", [])
