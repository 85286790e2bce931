"""A run's own statements run on the unit's pooled psycopg connection. On a lost
connection the pool is drained: every idle connection made before the loss is replaced,
so after a Postgres restart a worker does not meet one dead connection per try
(docs/architecture.md §7)."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import Engine

from council.errors import TransientDatabaseError
from council.ledger import db
from tests.connections import end_every_other_connection
from tests.engines import uow_of


def test_a_connection_lost_under_a_run_statement_recycles_the_whole_pool(
    engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a pool that never pings an idle connection and holds two idle connections
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)
    uow = uow_of(engine)
    with uow() as first, uow() as second:
        first.conn.execute("SELECT 1")
        second.conn.execute("SELECT 1")
    # When Postgres ends them, and a run's fence runs on the driver path
    assert end_every_other_connection(db_url) >= 2
    with pytest.raises(TransientDatabaseError), uow() as tx:
        tx.runs.fence(uuid.uuid4(), 1)
    # Then the next two transactions, one holding its connection while the other opens,
    # get live connections: the other dead one was recycled too
    with uow() as tx, uow() as other:
        assert tx.runs.fence(uuid.uuid4(), 1) is None
        assert other.runs.fence(uuid.uuid4(), 1) is None
