"""What a client was told survives the loss of the primary, and exactly-once and leases hold
across a promotion (issue 47; docs/operations/replication.md).

Each test runs against a synchronous standby (it must pass) and an asynchronous one
(strict xfail: it must fail, because the promoted standby lacks what the lost primary
acknowledged; conftest.acked_then_primary_lost makes that loss certain rather than lucky
by holding the standby's WAL receiver while the write commits).
"""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID

import psycopg
import pytest
from sqlalchemy import Engine

from council.domain.results.consolidation import Evaluated
from council.ledger import db
from council.services.consolidation import consolidate, replay
from tests.builders import Ledger
from tests.engines import uow_of, url_of
from tests.replicated.conftest import acked_then_primary_lost, retrying
from tests.soak.replica import ReplicatedCluster

pytestmark = pytest.mark.slow


def _one(cluster: ReplicatedCluster, sql: str, *params: Any) -> Any:
    """A value read on whatever server is the primary now (the multi-host URL finds it)."""
    with psycopg.connect(cluster.owner_url) as conn:
        row = conn.execute(sql, params).fetchone()
    return row[0] if row else None


def _on_new_primary(cluster: ReplicatedCluster, engine: Engine) -> None:
    """Council's own pool, whose connections went to the lost primary, reaches the new one
    without a restart (the pool dropped them; the multi-host URL found the primary)."""
    pool = db.pool_for(url_of(engine))

    def port() -> Any:
        with db.unit_of_work(pool) as conn:  # its errors translated: a lost connection is transient
            row = conn.execute("SELECT inet_server_port()").fetchone()
            return None if row is None else row[0]

    assert retrying(port) == cluster.nodes[cluster.primary].port


def test_acknowledged_claim_run_end_and_consolidation_survive_the_primary(
    cluster: ReplicatedCluster, engine: Engine
) -> None:
    ledger = Ledger.new(engine, title="failover: acknowledged writes")
    version = UUID(str(ledger.node("Acknowledged writes survive a failover")["version_id"]))
    first = ledger.run("anthropic")
    ledger.claim(first, version, confidence=0.8, cites=[ledger.evidence[0]])
    ledger.close(first)

    def write() -> tuple[UUID, UUID, Evaluated]:
        run = ledger.run("openai")
        claim = ledger.claim(run, version, confidence=0.8, cites=[ledger.evidence[1]])
        ledger.close(run)  # the run's end
        return run, UUID(str(claim["id"])), consolidate(ledger.uow, version, actor="test")

    told, error = acked_then_primary_lost(cluster, write)
    assert error is None and told is not None
    run, claim_id, made = told
    assert made.outcome == "committed" and made.consolidation_id is not None

    _on_new_primary(cluster, engine)
    assert _one(cluster, "SELECT count(*) FROM claims WHERE id = %s", claim_id) == 1, (
        "acknowledged claim lost"
    )
    assert _one(cluster, "SELECT status FROM agent_runs WHERE id = %s", run) == "succeeded", "run end lost"
    live = _one(
        cluster,
        "SELECT array_agg(id) FROM consolidations WHERE logical_node_id = %s AND status = 'live'",
        made.logical_node_id,
    )
    assert live == [made.consolidation_id], f"acknowledged consolidation {made.consolidation_id}; live {live}"
    consolidation_id = made.consolidation_id
    assert consolidation_id is not None
    replayed = retrying(lambda: replay(uow_of(engine), consolidation_id))
    assert replayed.match, "the consolidation replays differently on the new primary"


def test_the_committer_stays_exactly_once_when_the_lock_holders_primary_dies(
    cluster: ReplicatedCluster, engine: Engine
) -> None:
    """The node's advisory lock lives in the old primary's memory and dies with it: a second
    committer on the new primary takes it at once, while the holder's commit was in flight.
    What makes a second live consolidation impossible is on disk, replicated: the partial
    unique index ``consolidations_one_live_per_node`` and the idempotent snapshot hash (the
    same version and snapshot answer the consolidation already made). Every caller is told
    one consolidation, the one live in the ledger."""
    ledger = Ledger.new(engine, title="failover: exactly once")
    version = ledger.ready_node("Exactly once across a promotion")

    holder, error = acked_then_primary_lost(
        cluster, lambda: consolidate(ledger.uow, version, actor="holder"), acknowledged=False
    )
    # synchronous: the holder's commit waited for the standby when its primary died; its own
    # retry (the committer's) may have finished on the new primary. Asynchronous: it was told
    # `committed` before the standby had it.
    other = retrying(lambda: consolidate(uow_of(engine), version, actor="other"))
    again = retrying(lambda: consolidate(uow_of(engine), version, actor="holder, again"))
    told = {
        r.consolidation_id
        for r in (holder, other, again)
        if r is not None and r.outcome in ("committed", "already_consolidated")
    }
    with psycopg.connect(cluster.owner_url) as conn:
        live = conn.execute(
            "SELECT id, snapshot_sha256 FROM consolidations WHERE node_version_id = %s AND status = 'live'",
            (version,),
        ).fetchall()
        assert len(live) == 1
        assert told == {live[0][0]}, (
            f"callers were told {told}; the ledger's live consolidation is {live[0][0]}"
        )
        assert other.snapshot_sha256 == live[0][1]
        # the index, not the lock, is what refuses a second live consolidation of the node
        with pytest.raises(psycopg.errors.UniqueViolation), conn.transaction():
            conn.execute(
                "CREATE TEMP TABLE twin AS SELECT * FROM consolidations WHERE id = %s", (live[0][0],)
            )
            conn.execute("UPDATE twin SET id = gen_random_uuid()")
            conn.execute("INSERT INTO consolidations SELECT * FROM twin")
    assert error is None or holder is None


def test_a_lease_granted_by_the_old_primary_is_honoured_then_fenced(
    cluster: ReplicatedCluster, engine: Engine
) -> None:
    """A worker told it holds a run keeps it on the new primary until its lease runs out (nobody
    else may take it, its attempt still passes the fence); after, another worker takes the run
    and the first one's attempt is fenced out (its writes are refused)."""
    ledger = Ledger.new(engine, title="failover: leases")
    run_id = ledger.dispatched()
    lease_s = 10.0

    def grant() -> Any:
        with ledger.uow() as tx:
            return tx.runs.begin(run_id, owner="w1@old-primary", lease_s=lease_s).run

    granted, error = acked_then_primary_lost(cluster, grant)
    assert error is None and granted is not None

    def claim(owner: str) -> Any:
        with uow_of(engine)() as tx:
            return tx.runs.begin(run_id, owner=owner, lease_s=lease_s).run

    def fence(attempt: int) -> Any:
        with uow_of(engine)() as tx:
            return tx.runs.fence(run_id, attempt)

    expires = _one(cluster, "SELECT extract(epoch FROM lease_expires_at - clock_timestamp()) FROM agent_runs "
                   "WHERE id = %s", run_id)  # fmt: skip
    assert expires is not None, "the lease the old primary granted is gone"
    if float(expires) > 0.5:  # honoured while it lasts
        assert retrying(lambda: claim("w2@new-primary")) is None, "another worker took a leased run"
        assert retrying(lambda: fence(granted.attempt)) is not None, "the lease holder was fenced early"
    time.sleep(max(0.0, float(expires)) + 0.5)
    taken = retrying(lambda: claim("w2@new-primary"))
    assert taken is not None and taken.attempt == granted.attempt + 1
    assert retrying(lambda: fence(granted.attempt)) is None, "the expired holder's attempt still passes"
