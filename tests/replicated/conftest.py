"""A primary and its standby of the tests' own (tests/soak/replica.py: the pgserver wheel's
binaries, ``pg_basebackup -R``, ``pg_ctl promote``, ``pg_rewind``), reached as Council reaches a
replicated ledger: the multi-host URL with ``target_session_attrs=read-write``.

Every test runs twice: against a synchronous standby (the supported deployment,
docs/operations/replication.md), where it must pass, and against a deliberately asynchronous
one, where it must fail (strict xfail: a pass there fails the run), as the same promise does
not hold without one. Run with `make test-replicated` (COUNCIL_TEST_REPLICATED=1).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest
from sqlalchemy import Engine

from council.errors import TransientDatabaseError
from tests.engines import dispose_all, engine_for
from tests.soak.replica import ReplicatedCluster

T = TypeVar("T")

ASYNC_LOSES = (
    "an asynchronous standby acknowledges a commit before the standby has it: the primary "
    "SIGKILLed right after the acknowledgement, the promoted standby does not hold it"
)


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(True, id="sync"),
        pytest.param(
            False, id="async", marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=ASYNC_LOSES)
        ),
    ],
)
def pair(request: pytest.FixtureRequest) -> Iterator[ReplicatedCluster]:
    # under /tmp, not pytest's basetemp: Postgres runs as an unprivileged user when we are root
    workdir = Path(tempfile.mkdtemp(prefix="council-replicated-"))
    cluster = ReplicatedCluster(workdir, sync=request.param)
    try:
        cluster.up_ledger()
        yield cluster
    finally:
        dispose_all()
        cluster.down()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def cluster(pair: ReplicatedCluster) -> Iterator[ReplicatedCluster]:
    """The pair, whole again after the test (the old primary back as the standby)."""
    yield pair
    if not pair.procs["standby"].running():
        pair.rejoin()


@pytest.fixture
def engine(cluster: ReplicatedCluster) -> Engine:
    """Council's engine on the multi-host URL, as the application's role."""
    return engine_for(cluster.app_url)


def retrying(fn: Callable[[], T], timeout_s: float = 60) -> T:
    """What every Council client does with a transient error (a worker's task retry, the CLI's,
    the live page's reconnect): try again; the pool has dropped the dead connection and the
    next one finds the new primary."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return fn()
        except TransientDatabaseError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def acked_then_primary_lost(
    cluster: ReplicatedCluster, write: Callable[[], T], *, acknowledged: bool = True
) -> tuple[T | None, BaseException | None]:
    """Run ``write`` with the standby's replication stalled (its connection to the primary goes
    through a proxy that holds every byte), then SIGKILL the primary and promote the standby,
    whatever the stalled connection held discarded. ``acknowledged``: the primary is killed
    right after ``write`` returns — at once with an asynchronous standby, which acknowledges
    without it; a synchronous primary waits for the standby, so replication is let go first.
    Not ``acknowledged``: the primary is killed while ``write``'s commit waits for the
    synchronous standby (mid-transaction for the client: sent, not acknowledged). Returns what
    ``write`` returned, or what it raised."""
    cluster.caught_up()  # what was written before is on the standby
    proxy = cluster.repl_proxy
    assert proxy is not None
    got: dict[str, Any] = {}

    def run() -> None:
        try:
            got["value"] = write()
        except BaseException as exc:
            got["error"] = exc

    proxy.set_state("stall")
    try:
        th = threading.Thread(target=run, daemon=True)
        th.start()
        if cluster.sync:  # its commit waits for the stalled standby
            _wait_syncrep(cluster)
            if acknowledged:
                proxy.set_state("up")
                th.join(timeout=60)
        else:  # acknowledged without the standby, however long the write takes
            th.join(timeout=60)
        cluster.failover("kill", before_promote=lambda: proxy.set_state("drop"))
        th.join(timeout=60)
    finally:
        proxy.set_state("up")
    assert not th.is_alive(), "the write neither returned nor failed after its primary was lost"
    return got.get("value"), got.get("error")


def _wait_syncrep(cluster: ReplicatedCluster, timeout_s: float = 30) -> None:
    """Until a backend of the primary waits for the synchronous standby (its commit sent)."""
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(cluster.node_url(cluster.primary), autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'"
            ).fetchone()
            if row and row[0]:
                return
            time.sleep(0.05)
    raise RuntimeError("no commit waited for the synchronous standby")
