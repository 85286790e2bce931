"""A write that reaches a hot standby (a URL naming it alone, or an old primary brought back as
a standby under a connection that was not re-targeted) is refused with SQLSTATE 25006. Council
takes that for a lost connection: transient, the connection dropped (council.ledger.pg.on_standby),
never a bug report. The same SQLSTATE from a primary, a write in a read-only transaction, stays
an error. Not parametrized by the standby's mode: a standby refuses writes either way."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from council.errors import TransientDatabaseError
from council.ledger import db
from council.ledger.unit import UnitOfWork
from council.services.threads import create_thread
from tests.soak.replica import ReplicatedCluster

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def standby_url() -> Iterator[str]:
    workdir = Path(tempfile.mkdtemp(prefix="council-replicated-standby-"))
    cluster = ReplicatedCluster(workdir)
    try:
        cluster.up_ledger()
        yield f"postgresql://council_app@127.0.0.1:{cluster.nodes[cluster.standby].port}/council"
    finally:
        db.dispose_all()
        cluster.down()
        shutil.rmtree(workdir, ignore_errors=True)


def test_a_write_on_a_standby_is_transient_and_drops_the_connection(standby_url: str) -> None:
    pool = db.pool_for(standby_url, pool_size=2)
    uow = UnitOfWork(pool)

    def backend() -> int:
        with db.unit_of_work(pool) as conn:
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None
            return int(row[0])

    before = backend()
    assert backend() == before  # the pool hands the same connection out again (LIFO)
    with pytest.raises(TransientDatabaseError):
        create_thread(uow, title="on a standby", objective="refused", actor="test")
    assert backend() != before, "the pool kept the connection that reached a standby"
    # a statement of the transaction's own, not a named query: the unit of work drops it too
    before = backend()
    with pytest.raises(TransientDatabaseError), db.unit_of_work(pool) as conn:
        conn.execute("CREATE TABLE refused (x int)")
    assert backend() != before


def test_the_standby_reports_itself_in_hot_standby(standby_url: str) -> None:
    """What pg.on_standby reads: the ParameterStatus every Postgres 14+ server sends."""
    with psycopg.connect(standby_url) as conn:
        assert conn.info.parameter_status("in_hot_standby") == "on"
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction) as caught:
            conn.execute("CREATE TEMP TABLE t (x int)")
            conn.execute("INSERT INTO threads (id) VALUES (gen_random_uuid())")
        from council.ledger.pg import on_standby

        assert on_standby(caught.value, conn)
