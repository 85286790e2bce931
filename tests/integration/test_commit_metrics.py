"""The committer's metrics against real Postgres: commit latency by outcome and
the advisory-lock statements it times."""

from __future__ import annotations

from sqlalchemy import Engine

from council import metrics
from council.services.consolidation import consolidate
from tests.builders import ACTOR, Ledger
from tests.engines import uow_of
from tests.scrape import sample


def test_a_committed_and_a_repeated_consolidation_are_timed_by_outcome(engine: Engine) -> None:
    # Given a node ready to consolidate and the current metrics
    ledger = Ledger.new(engine)
    version_id = ledger.ready_node()
    before = metrics.exposition()[0]
    # When it is consolidated, again, and once as a dry run
    uow = uow_of(engine)
    first = consolidate(uow, version_id, actor=ACTOR)
    again = consolidate(uow, version_id, actor=ACTOR)
    consolidate(uow, version_id, actor=ACTOR, dry_run=True)
    after = metrics.exposition()[0]

    def grew(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    # Then one commit latency is observed per outcome (the dry run is not a commit)
    assert (first.outcome, again.outcome) == ("committed", "already_consolidated")
    assert grew("council_commit_duration_seconds_count", outcome="committed") == 1
    assert grew("council_commit_duration_seconds_count", outcome="already_consolidated") == 1
    assert grew("council_commit_duration_seconds_sum", outcome="committed") > 0
    # And every transaction timed its node-lock statement, uncontended and fast; only the one
    # that decided took the evidence locks (a repeat, dry or not, of a consolidated version is
    # answered by the node-lock statement itself, which reads the live consolidation: 0014)
    assert grew("council_commit_lock_wait_seconds_count", lock="node") == 3
    assert grew("council_commit_lock_wait_seconds_count", lock="evidence") == 1
    assert grew("council_commit_lock_wait_seconds_bucket", lock="node", le="10.0") == 3
    assert grew("council_retries_total", kind="commit_transaction") == 0
