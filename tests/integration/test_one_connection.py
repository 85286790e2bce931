"""A run, its round's close and its evaluation each hold one database connection at a time,
so a threads worker's pool may be smaller than its thread count (docs/operations/
deploy-and-scale.md, Postgres connections): a thread that held one connection while it
waited for a second could, with every connection so held, wait for ever."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, text

from council.adapters.scheduler import Recorder
from council.ledger.db import Pool, open_pool
from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate_many
from council.services.dispatch import dispatch
from council.services.execution import execute_run
from tests.builders import ACTOR, Ledger
from tests.integration.test_rounds import endorsing_models  # noqa: F401  (the fixture)


@pytest.fixture
def one_connection(db_url: str) -> Iterator[Pool]:
    """The database through a pool of exactly one connection: a second checkout by the
    thread that holds it waits 2 s and raises (the pool's timeout)."""
    pool = open_pool(db_url, size=1, timeout=2)
    yield pool
    pool.close()


@pytest.mark.usefixtures("endorsing_models")
def test_a_deliberative_council_runs_closes_its_rounds_and_is_decided_on_one_connection(
    engine: Engine, one_connection: Pool
) -> None:
    # Given two models of two providers that endorse the thread's head, and a pool of one connection
    ledger = Ledger.new(engine, evidence_items=1)
    version = ledger.node("The replica keeps up", cites=list(ledger.evidence))["version_id"]
    uow, scheduler = UnitOfWork(one_connection), Recorder()
    # When a deliberative council of two rounds is dispatched, run, closed round by round,
    # and what its last round sent to the commit queue is decided, all on that connection
    dispatch(uow, scheduler, ledger.thread_id, ["alpha", "beta"], mode="deliberative", rounds=2, actor=ACTOR)
    done = 0
    while done < len(scheduler.runs):
        ended = execute_run(uow, scheduler, scheduler.runs[done])
        assert ended.status == "succeeded", ended.error
        done += 1
    sent = list(scheduler.evaluations)  # the last round's (none: the head it saw was decided)
    decided = consolidate_many(uow, list(dict.fromkeys([version, *sent])), actor="worker:commit")
    # Then every run ended, the blind round's close decided the head, and the commit queue's
    # evaluation of it found it decided
    assert done == 4
    assert [d.node_version_id for d in decided][:1] == [version]
    with engine.connect() as conn:
        actors = conn.execute(
            text(
                "SELECT actor FROM node_status_transitions "
                "WHERE node_version_id = :v AND to_status = 'resolved'"
            ),
            {"v": version},
        ).scalars()
        assert list(actors) == ["worker:round"]
