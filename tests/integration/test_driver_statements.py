"""A run's own statements run on the psycopg connection under the unit's transaction
(``council.ledger.pg.in_transaction``), past SQLAlchemy's per-statement machinery. On a
lost connection they must leave the pool as SQLAlchemy's own execution leaves it: every
connection made before the loss is recycled, so after a Postgres restart a worker does
not meet one dead connection per try (docs/architecture.md §7)."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import Engine, text

from council.errors import TransientDatabaseError
from council.ledger import db
from council.ledger.unit import UnitOfWork
from tests.connections import end_every_other_connection


def test_a_connection_lost_under_a_run_statement_recycles_the_whole_pool(
    engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a pool that never pings an idle connection and holds two idle connections
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)
    with engine.connect() as first, engine.connect() as second:
        first.execute(text("SELECT 1"))
        second.execute(text("SELECT 1"))
    uow = UnitOfWork(engine)
    # When Postgres ends them, and a run's fence runs on the driver path
    assert end_every_other_connection(db_url) >= 2
    with pytest.raises(TransientDatabaseError), uow() as tx:
        tx.runs.fence(uuid.uuid4(), 1)
    # Then the next two transactions, one holding its connection while the other opens,
    # get live connections: the other dead one was recycled too
    with uow() as tx, uow() as other:
        assert tx.runs.fence(uuid.uuid4(), 1) is None
        assert other.runs.fence(uuid.uuid4(), 1) is None
