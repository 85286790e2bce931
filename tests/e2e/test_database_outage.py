"""No work is lost when Postgres goes away under real workers (docs/architecture.md §7, Delivery).

A Postgres of this test's own (the session's server is not disturbed) is
SIGKILLed while runs are executing, evaluations and a cascade continuation
wait in their queues, and challenged memory waits for re-verification. The
workers consume what they can while it is down, and every such message fails.
Then Postgres comes back on the same socket, and within two sweep intervals
plus a stated margin every ready node is consolidated exactly once, every run
has ended, the cascade has reached every memory item it should, and the
challenged memory is re-verified.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import redis
from sqlalchemy import Engine, text

from council.bootstrap import bootstrap
from council.domain.commands import NewNode
from council.services.consolidation import consolidate, consolidate_many
from council.services.nodes import add_node
from tests.builders import ACTOR, Ledger
from tests.engines import dispose_all, engine_for, unit_of_work, uow_of
from tests.own_postgres import OwnPostgres, own_postgres
from tests.processes import stop_groups

SWEEP_EVERY_S = 3
RUN_LEASE_S = 6
# What recovery takes beyond noticing (at most two sweep intervals): the work itself.
# Two deliberative rounds of three 1.5 s runs on one slot (the contested proposal's thread
# has no worker runs, so no review is dispatched for it), their evaluations, five cascade
# steps' worth of marks, under a loaded 2-core machine.
MARGIN_S = 45
BOUND_S = 2 * SWEEP_EVERY_S + MARGIN_S
# For a runs worker to claim a re-enqueued run, on a loaded 2-core machine (13.1 s was seen
# against a 13 s bound in a clean clone's run); still far below the 300 s the stale sweep waits.
RUNS_MARGIN_S = 20
READY_NODES = 6
LEAVES = 205  # more dependents than one cascade step may reach (CASCADE_STEP_LIMIT = 200)
LEAVES_WITH_MEMORY = 4

Started = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def database() -> Iterator[tuple[OwnPostgres, str]]:
    with own_postgres() as server:
        yield server, server.create_migrated("council_outage")
    dispose_all()


@pytest.fixture
def env(database: tuple[OwnPostgres, str], redis_url: str, tmp_path: Path) -> dict[str, str]:
    redis.Redis.from_url(redis_url).flushdb()  # no message of an earlier test survives
    environ = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    environ.update(
        COUNCIL_DATABASE_URL=database[1],
        COUNCIL_BROKER_URL=redis_url,
        COUNCIL_HOME=str(tmp_path),
        COUNCIL_SIMULATE="1",
        COUNCIL_OFFLINE="1",
        COUNCIL_SIM_LATENCY_S="1.5",
        COUNCIL_RUN_LEASE_S=str(RUN_LEASE_S),
        COUNCIL_SWEEP_EVERY_S=str(SWEEP_EVERY_S),
        COUNCIL_REVERIFY_EVERY_S=str(SWEEP_EVERY_S),
        NO_COLOR="1",
    )  # COUNCIL_SWEEP_STALE_S is left at its default (300 s): recovery must not wait for it
    return environ


@pytest.fixture
def start(env: dict[str, str], tmp_path: Path) -> Iterator[Started]:
    started: list[subprocess.Popen[bytes]] = []

    def run(*args: str, concurrency: int = 2) -> subprocess.Popen[bytes]:
        log = (tmp_path / f"worker-{len(started)}.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "council.cli", "worker", "--concurrency", str(concurrency), *args],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started.append(proc)
        return proc

    yield run
    stop_groups(started, grace_s=20)


def _council(env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "council.cli", *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _rows(engine: Engine, sql: str, **params: Any) -> list[Any]:
    with unit_of_work(engine) as conn:
        return list(conn.execute(text(sql), params))


def _cascade_and_reverification(engine: Engine) -> tuple[Ledger, list[UUID], UUID]:
    """A consolidated root resting on evidence[0] and [1] (invalidating [0] is
    material), one consolidated node depending on it and LEAVES below that one,
    LEAVES_WITH_MEMORY of them consolidated: the cascade's first step reaches the
    middle node, and what it cuts off reaches the leaves. And a consolidated node
    whose support all cites evidence[4] beside evidence of its own, so that
    challenging [4] makes its memory provisional and re-verification stable again."""
    ledger = Ledger.new(engine, title="cascade", evidence_items=7)
    root = ledger.ready_node("root")
    runs = [ledger.run("anthropic"), ledger.run("openai")]

    def supported(content: str, cites: list[list[UUID]], depends_on: list[UUID]) -> UUID:
        version = UUID(str(ledger.node(content, depends_on=depends_on)["version_id"]))
        for run, evidence in zip(runs, cites, strict=True):
            ledger.claim(run, version, cites=evidence)
        return version

    own = [[ledger.evidence[2]], [ledger.evidence[3]]]
    middle = supported("middle", own, [root])
    with_memory = [supported(f"leaf {i}", own, [middle]) for i in range(LEAVES_WITH_MEMORY)]
    for i in range(LEAVES - LEAVES_WITH_MEMORY):
        bare = NewNode(thread=ledger.thread_id, content=f"bare leaf {i}", edges=(("depends_on", middle),))
        add_node(ledger.uow, bare, actor=ACTOR)
    challenged = supported(
        "re-verified",
        [[ledger.evidence[4], ledger.evidence[5]], [ledger.evidence[4], ledger.evidence[6]]],
        [],
    )
    for run in runs:  # their recorder is done with them: every run of the ledger ends
        ledger.close(run)
    results = consolidate_many(ledger.uow, [root, middle, *with_memory, challenged], actor=ACTOR)
    assert {r.outcome for r in results} == {"committed"}
    return ledger, [middle, *with_memory], challenged


def _ready_heads(engine: Engine) -> list[UUID]:
    """Open or tentative heads with claims that a committer would consolidate now."""
    heads = _rows(
        engine,
        "SELECT s.id FROM node_version_states s JOIN logical_nodes ln ON ln.head_version_id = s.id "
        "WHERE s.status IN ('open', 'tentative') "
        "AND EXISTS (SELECT 1 FROM claims c WHERE c.node_version_id = s.id)",
    )
    return [
        row.id
        for row in heads
        if consolidate(uow_of(engine), row.id, actor=ACTOR, dry_run=True).outcome == "would_commit"
    ]


def test_a_postgres_outage_loses_no_work(
    database: tuple[OwnPostgres, str],
    env: dict[str, str],
    start: Started,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, url = database
    monkeypatch.setenv("COUNCIL_BROKER_URL", redis_url)  # for this process's scheduler
    engine = engine_for(url)
    broker = redis.Redis.from_url(redis_url)
    # Given ready nodes whose evaluations wait in the commit queue (no commit worker yet)
    staged = Ledger.new(engine, title="staged")
    ready = [staged.ready_node(f"ready {i}") for i in range(READY_NODES)]
    bootstrap(url).required_scheduler().enqueue_evaluations(ready)
    # And a material invalidation whose cut-off cascade waits in the maintenance queue,
    # and a challenge whose memory waits for re-verification
    cascade_ledger, reached, challenged = _cascade_and_reverification(engine)
    invalidated = _council(
        env, "evidence", "invalidate", str(cascade_ledger.evidence[0]), "--reason", "forged"
    )
    assert invalidated["cascade"]["continuation_queued"] is True
    _council(env, "evidence", "challenge", str(cascade_ledger.evidence[4]), "--reason", "questioned")
    assert broker.llen("maintenance") == 1 and broker.llen("commit") >= 1
    # And a deliberative council executing on a runs worker with one slot, so that when the
    # first run is running the others wait in the queue
    council = Ledger.new(engine, title="council")
    council.node("SQLite parity establishes query-semantics equivalence", cites=[council.evidence[0]])
    council.node("WAL mode is safe for concurrent readers", cites=[council.evidence[1]])
    start("--queues", "runs", concurrency=1)
    dispatched = _council(
        env, "dispatch", "--thread", str(council.thread_id), "--agents", "claude,codex,glm", "--mode",
        "deliberative", "--rounds", "2",
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not _rows(engine, "SELECT 1 FROM agent_runs WHERE status = 'running'"):
        assert time.monotonic() < deadline, "no run started"
        time.sleep(0.2)

    # When Postgres is killed mid-run
    server.stop(kill=True)
    dispose_all()  # this test's own pool would only hold dead connections
    # And the commit and maintenance workers (with the beat's sweeps) consume what waits, and fail
    start("--queues", "commit,maintenance", "--beat")
    deadline = time.monotonic() + 120
    while broker.llen("commit") or broker.llen("maintenance"):
        assert time.monotonic() < deadline, "the workers did not consume the waiting messages"
        time.sleep(0.2)
    time.sleep(3)
    # And Postgres comes back on the same socket
    server.start()
    back = time.monotonic()
    engine = engine_for(url)
    # (runs whose message was consumed while it was down sit queued, with nothing waiting for them)
    lost = [
        row.id for row in _rows(engine, "SELECT id FROM agent_runs WHERE status IN ('created', 'queued')")
    ]
    assert lost, "no run message was consumed during the outage: the test proves nothing"
    picked_up_s: float | None = None

    # Then within two sweep intervals and the margin, nothing is left undone
    def undone() -> list[str]:
        left = []
        unconsolidated = _rows(
            engine,
            "SELECT v FROM unnest(CAST(:v AS uuid[])) v WHERE NOT EXISTS "
            "(SELECT 1 FROM consolidations c WHERE c.node_version_id = v AND c.status = 'live')",
            v=ready,
        )
        if unconsolidated:
            left.append(f"{len(unconsolidated)} staged ready node(s) not consolidated")
        running = _rows(
            engine,
            "SELECT status, count(*) AS n FROM agent_runs "
            "WHERE status NOT IN ('succeeded', 'failed') GROUP BY 1",
        )
        if running:
            left.append("runs not ended: " + ", ".join(f"{r.n} {r.status}" for r in running))
        [rounds] = _rows(
            engine, "SELECT count(*) AS n FROM agent_runs WHERE dispatch_id = :d", d=dispatched["dispatch_id"]
        )
        if rounds.n != 6:
            left.append(f"{rounds.n} of the dispatch's 6 runs exist")
        moved = _rows(
            engine,
            "SELECT count(*) AS n FROM memory_items "
            "WHERE node_version_id = ANY(CAST(:v AS uuid[])) AND status = 'provisional'",
            v=reached,
        )
        if moved[0].n != len(reached):
            left.append(f"the cascade moved {moved[0].n} of {len(reached)} memory items")
        [memory] = _rows(engine, "SELECT status FROM memory_items WHERE node_version_id = :v", v=challenged)
        if memory.status != "stable":
            left.append(f"challenged memory still {memory.status}")
        return left

    left = ["not checked yet"]
    while left and time.monotonic() - back < BOUND_S:
        time.sleep(0.5)
        try:
            left = undone()
            if picked_up_s is None and not _rows(
                engine, "SELECT 1 FROM agent_runs WHERE id = ANY(:ids) AND status = 'queued'", ids=lost
            ):
                picked_up_s = time.monotonic() - back
        except Exception as exc:  # the database may still be recovering from the crash
            left = [f"{type(exc).__name__}: {exc}"]
    recovered_s = time.monotonic() - back
    logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in sorted(tmp_path.glob("worker-*.log")))
    assert left == [], (
        f"after {recovered_s:.1f} s (bound {BOUND_S} s): {left}\n--- worker logs (tails)\n{logs}"
    )
    print(f"\nrecovered {recovered_s:.1f} s after Postgres came back (bound {BOUND_S} s)")
    # And the lost runs were taken up again within one sweep interval (and a margin for a worker
    # to claim them), not after COUNCIL_SWEEP_STALE_S
    assert picked_up_s is not None and picked_up_s <= SWEEP_EVERY_S + RUNS_MARGIN_S, picked_up_s
    print(f"lost runs taken up {picked_up_s:.1f} s after Postgres came back")
    # And every ready node is consolidated exactly once: none is left ready, none twice
    assert _ready_heads(engine) == []
    twice = _rows(engine, "SELECT logical_node_id FROM consolidations GROUP BY 1 HAVING count(*) > 1")
    assert twice == []
    committed = _rows(
        engine,
        "SELECT subject_id FROM events WHERE kind = 'consolidation.committed' GROUP BY 1 HAVING count(*) > 1",
    )
    assert committed == []
    # And every run ended with a reason when it failed, its claims written once
    runs = _rows(engine, "SELECT id, dispatch_id, round, status, error FROM agent_runs")
    unended = [r for r in runs if not (r.status == "succeeded" or (r.status == "failed" and r.error))]
    assert unended == [], f"{unended}\n--- worker logs (tails)\n{logs}"
    duplicates = _rows(engine, "SELECT run_id, node_version_id FROM claims GROUP BY 1, 2 HAVING count(*) > 1")
    assert duplicates == []
    # And the re-verification says what it checked
    [check] = _rows(
        engine,
        "SELECT t.reason FROM memory_transitions t JOIN memory_items m ON m.id = t.memory_item_id "
        "WHERE m.node_version_id = :v AND t.to_status = 'stable'",
        v=challenged,
    )
    assert "re-verification" in check.reason


def _wait_for(predicate: Callable[[], bool], timeout_s: float, what: str) -> float:
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < timeout_s, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(0.2)
    return time.monotonic() - started


def _staged_evaluation(url: str, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> UUID:
    """A ready node whose evaluation message waits in the commit queue."""
    monkeypatch.setenv("COUNCIL_BROKER_URL", redis_url)
    engine = engine_for(url)
    version = Ledger.new(engine).ready_node()
    bootstrap(url).required_scheduler().enqueue_evaluations([version])
    return version


def _consolidated(url: str, version: UUID) -> bool:
    try:
        return bool(
            _rows(engine_for(url), "SELECT 1 FROM consolidations WHERE node_version_id = :v", v=version)
        )
    except Exception:  # still recovering
        return False


def test_an_evaluation_consumed_while_postgres_is_down_is_retried_and_marked_while_it_waits(
    database: tuple[OwnPostgres, str],
    env: dict[str, str],
    start: Started,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from council.adapters.coalesce import EVALUATION, RETRY_MARK_TTL_S

    server, url = database
    version = _staged_evaluation(url, redis_url, monkeypatch)
    broker = redis.Redis.from_url(redis_url)
    mark = EVALUATION + str(version)
    # When Postgres stops and a commit worker (no beat, so no sweep) consumes the evaluation
    server.stop(kill=False)
    dispose_all()
    env["COUNCIL_RETRY_MAX"] = "8"  # enough backoff to outlast the outage, whatever the draws
    start("--queues", "commit")
    log = tmp_path / "worker-0.log"
    _wait_for(lambda: "retry: Retry in" in log.read_text(errors="replace"), 120, "the evaluation to retry")
    # Then while its retry waits, the version is marked again, for a bounded time only (a retry
    # whose jittered countdown drew near 0 can start, and unmark it, before this first look;
    # its own retry marks it again)
    _wait_for(lambda: 0 < int(broker.ttl(mark)) <= RETRY_MARK_TTL_S, 30, "the version marked, with a bound")
    # And once Postgres is back, the retry itself consolidates it (nothing else could)
    server.start()
    _wait_for(lambda: _consolidated(url, version), 90, "the retried evaluation")
    # And no mark is left behind
    assert broker.exists(mark) == 0
    assert "gave up" not in log.read_text(errors="replace")


def test_spent_retries_end_in_an_error_line_and_the_sweep_finishes_the_work(
    database: tuple[OwnPostgres, str],
    env: dict[str, str],
    start: Started,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from council.adapters.coalesce import EVALUATION

    server, url = database
    version = _staged_evaluation(url, redis_url, monkeypatch)
    broker = redis.Redis.from_url(redis_url)
    # When Postgres stops and a worker with no retries to spare consumes the evaluation
    server.stop(kill=False)
    dispose_all()
    env["COUNCIL_RETRY_MAX"] = "0"
    start("--queues", "commit,maintenance", "--beat")
    log = tmp_path / "worker-0.log"
    gave_up = "evaluation of 1 version(s): gave up after 0 retries on a transient error"
    _wait_for(lambda: gave_up in log.read_text(errors="replace"), 120, "the evaluation to give up")
    # Then it said so at ERROR, and left no mark that would keep the sweep away
    [line] = [line for line in log.read_text(errors="replace").splitlines() if gave_up in line]
    assert "ERROR" in line and "left for the sweep" in line
    assert broker.exists(EVALUATION + str(version)) == 0
    # And once Postgres is back, the sweep finds the version within two sweep intervals (and a margin)
    server.start()
    took = _wait_for(lambda: _consolidated(url, version), 2 * SWEEP_EVERY_S + 20, "the sweep to evaluate it")
    print(f"\nconsolidated by the sweep {took:.1f} s after Postgres came back")
