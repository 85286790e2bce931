"""At most one live consolidated alternative per set, under real concurrency (invariant 8,
docs/architecture.md §4): rival versions each meeting the rules on their own, decided by
racing processes, each on its own connection. What keeps the second rival from committing
is the thread's alternatives key the committer takes before its node locks: without it,
each rival's committer holds only its own node's lock, reads no live rival and commits."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from sqlalchemy import Engine, text

from benchmarks.contention import evaluator
from benchmarks.harness import race
from council.services.consolidation import consolidate, replay
from tests.builders import ACTOR
from tests.processes import RACE_START_METHOD
from tests.rivals import exclusive_ledger, rivals

EVALUATORS = 32
# Each race is of one fresh pair. Without the set lock a race leaves both rivals live about
# two times in three here (a rival's committer that starts after the other committed sees
# it live), so three races make a test that fails without the lock all but every time.
RACES = 3


def _rows(engine: Engine, sql: str, **params: Any) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(text(sql), params))


@pytest.mark.parametrize("pair", range(RACES))
def test_32_racing_evaluations_of_two_rivals_leave_exactly_one_live(
    engine: Engine, db_url: str, pair: int
) -> None:
    # Given two rival versions (Y contradicts X) that each meet the rules on their own:
    # two independent endorsements from two providers, margin 0, no confident rival endorsement
    ledger = exclusive_ledger(engine)
    x, y = rivals(ledger)
    for version in (x, y):  # alone, each would consolidate
        assert consolidate(ledger.uow, version, actor=ACTOR, dry_run=True).outcome == "would_commit"
    # When 32 processes, warmed up, connected and waiting, are released at once, half on each
    raced = race(
        evaluator,
        [(db_url, x if i % 2 else y, f"rival evaluator {i}", True) for i in range(EVALUATORS)],
        start_method=RACE_START_METHOD,
    )
    # Then none failed, and exactly one of the set's alternatives holds a live consolidation
    assert raced.errors == []
    assert raced.exitcodes == [0] * EVALUATORS
    live = _rows(
        engine,
        "SELECT node_version_id FROM consolidations WHERE node_version_id IN (:x, :y) AND status = 'live'",
        x=x,
        y=y,
    )
    assert len(live) == 1, f"live consolidations in one set of alternatives: {live}"
    [winner] = [row.node_version_id for row in live]
    # And every evaluation answered accordingly: one commit, repeats of it, and the rival not ready
    outcomes = Counter(r["outcome"] for r in raced.results)
    assert outcomes["committed"] == 1
    assert outcomes["committed"] + outcomes["already_consolidated"] == EVALUATORS // 2
    assert outcomes["not_ready"] == EVALUATORS // 2
    # And the rival's decision says why, and replays as it was made (invariant 9)
    loser = y if winner == x else x
    again = consolidate(ledger.uow, loser, actor=ACTOR)
    assert again.outcome == "not_ready"
    failed = {r.rule: r.detail for r in again.reasons if not r.ok}
    assert set(failed) == {"no_live_rival"}
    assert str(winner)[:8] in failed["no_live_rival"]
    [committed] = _rows(engine, "SELECT id FROM consolidations WHERE node_version_id = :v", v=winner)
    assert replay(ledger.uow, str(committed.id)).match
    assert replay(ledger.uow, str(again.evaluation_id)).match
