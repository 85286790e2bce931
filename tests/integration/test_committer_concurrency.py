"""The committer under real concurrency (docs/architecture.md §4, invariant 8).

Racing processes, a randomized stress with claims and versions arriving
mid-evaluation, a crash while the node lock is held, and the guards that keep
the lock transaction-scoped and the isolation level READ COMMITTED.

Every contender is a process of its own with its own engine and connection
(forked from a server that imported the ledger once, ``tests.processes``):
``benchmarks.harness.race`` starts them, waits until each is prepared and
waiting, and releases them together with one Event.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import re
import signal
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine, text

from benchmarks.contention import evaluator
from benchmarks.harness import race
from council.domain.commands import NewVersion
from council.errors import CouncilError, TransientDatabaseError
from council.ledger.committer import _consolidate_batch
from council.services.consolidation import consolidate, consolidate_many, replay
from council.services.nodes import add_version
from tests.builders import ACTOR, Ledger
from tests.engines import engine_for, pq, uow_of
from tests.processes import RACE_START_METHOD

REPO = Path(__file__).resolve().parents[2]
EVALUATORS = 64
PROVIDERS = ("anthropic", "openai", "zhipu")


def _rows(engine: Engine, sql: str, **params: Any) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(text(sql), params))


def _scalar(engine: Engine, sql: str, **params: Any) -> Any:
    with engine.connect() as conn:
        return conn.execute(text(sql), params).scalar_one()


# ------------------------------------------------------------ 64 evaluators


def test_64_racing_evaluators_commit_exactly_once(engine: Engine, db_url: str) -> None:
    # Given a ready node
    version_id = Ledger.new(engine).ready_node()
    logical_node_id = _scalar(engine, "SELECT logical_node_id FROM node_versions WHERE id = :v", v=version_id)
    # When 64 evaluator processes, connected and waiting, are released on it at once
    # (cold: no warm-up dry run, so their timings vary as much as they will)
    warm = False
    raced = race(
        evaluator,
        [(db_url, version_id, f"evaluator {i}", warm) for i in range(EVALUATORS)],
        start_method=RACE_START_METHOD,
    )
    # Then none raised, exactly one committed and the others got that same consolidation
    assert raced.errors == []
    assert raced.exitcodes == [0] * EVALUATORS
    outcomes = Counter(r["outcome"] for r in raced.results)
    assert outcomes == {"committed": 1, "already_consolidated": EVALUATORS - 1}
    ids = {r["consolidation_id"] for r in raced.results}
    assert len(ids) == 1
    # And the ledger holds exactly one consolidation, live, for the logical node
    rows = _rows(
        engine, "SELECT id, status FROM consolidations WHERE logical_node_id = :n", n=logical_node_id
    )
    assert [(row.id, row.status) for row in rows] == [(ids.pop(), "live")]


# ------------------------------------------------------- overlapping batches

BATCH_NODES = 20
BATCH_WORKERS = 6


def _batch_worker(url: str, versions: list[UUID], seed: str) -> Callable[[], list[tuple[UUID, str, Any]]]:
    """Consolidate every version, shuffled, in batches of 2-7 (lock sets overlap in every combination)."""
    engine = engine_for(url, pool_size=1)
    rng = random.Random(seed)
    order = list(versions)
    rng.shuffle(order)

    def act() -> list[tuple[UUID, str, Any]]:
        answers = []
        start = 0
        while start < len(order):
            size = rng.randint(2, 7)
            batch = order[start : start + size]
            for result in consolidate_many(uow_of(engine), batch, actor=f"batch {seed}"):
                answers.append((result.node_version_id, result.outcome, result.consolidation_id))
            start += size
        return answers

    _scalar(engine, "SELECT 1")
    return act


def test_overlapping_batches_commit_each_node_exactly_once(engine: Engine, db_url: str) -> None:
    # Given ready nodes
    ledger = Ledger.new(engine)
    versions = [ledger.ready_node(f"batched claim {i}") for i in range(BATCH_NODES)]
    # When several processes consolidate all of them at once, each in its own
    # order and batch sizes, so their batches lock overlapping sets of nodes
    raced = race(
        _batch_worker,
        [(db_url, versions, f"seed-{i}") for i in range(BATCH_WORKERS)],
        start_method=RACE_START_METHOD,
    )
    # Then nobody saw an error (no deadlock surfaced), and each node committed once
    assert raced.errors == []
    answers = [answer for result in raced.results for answer in result]
    assert len(answers) == BATCH_NODES * BATCH_WORKERS
    committed = Counter(version for version, outcome, _ in answers if outcome == "committed")
    assert committed == Counter({version: 1 for version in versions})
    assert {outcome for _, outcome, _ in answers} == {"committed", "already_consolidated"}
    # And every answer for a node names the same consolidation, the one live row
    by_version: dict[UUID, set[Any]] = defaultdict(set)
    for version, _, consolidation_id in answers:
        by_version[version].add(consolidation_id)
    assert all(len(ids) == 1 for ids in by_version.values())
    live = _rows(engine, "SELECT id, node_version_id FROM consolidations WHERE status = 'live'")
    assert {row.node_version_id: {row.id} for row in live} == dict(by_version)
    assert all(replay(uow_of(engine), row.id).match for row in live)


# ---------------------------------------------------------- randomized stress

STRESS_NODES = 20
STRESS_WORKERS = 4
CALLS_PER_WORKER = 30
MUTATIONS = 24


def _stress_worker(url: str, nodes_: list[tuple[UUID, UUID]], seed: str) -> Callable[[], list[Any]]:
    """Random, often repeated consolidate calls on original or head versions."""
    engine = engine_for(url, pool_size=1)
    rng = random.Random(seed)

    def act() -> list[tuple[UUID, str, UUID | None]]:
        answers = []
        for _ in range(CALLS_PER_WORKER):
            logical_node_id, original = rng.choice(nodes_)
            if rng.random() < 0.5:
                version_id = original
            else:
                version_id = _scalar(
                    engine, "SELECT head_version_id FROM logical_nodes WHERE id = :n", n=logical_node_id
                )
            for _ in range(rng.choice((1, 1, 2, 3))):
                time.sleep(rng.uniform(0, 0.01))
                result = consolidate(uow_of(engine), version_id, actor=f"worker {seed}")
                answers.append((version_id, result.outcome, result.consolidation_id))
        return answers

    _scalar(engine, "SELECT 1")
    return act


def _mutator(
    url: str, thread_id: UUID, evidence: list[UUID], targets: list[UUID], seed: str
) -> Callable[[], list[str]]:
    """New claims (endorse or dispute, from new runs) on the head versions of
    some nodes and, now and then, a new version endorsed twice right away."""
    engine = engine_for(url, pool_size=1)
    ledger = Ledger(engine, thread_id, list(evidence))
    rng = random.Random(seed)

    def act() -> list[str]:
        done = []
        for i in range(MUTATIONS):
            time.sleep(rng.uniform(0, 0.02))
            logical_node_id = rng.choice(targets)
            # Revisions come late, when earlier versions have likely consolidated (supersession).
            if i >= MUTATIONS // 2 and rng.random() < 0.3:
                revision = NewVersion(logical_node=logical_node_id, content=f"revised {rng.random()}")
                version_id = add_version(uow_of(engine), revision, actor=ACTOR).version_id
                for i, provider in enumerate(("anthropic", "openai")):
                    ledger.claim(ledger.run(provider), version_id, confidence=0.8, cites=[evidence[i]])
                done.append("version")
                continue
            version_id = _scalar(
                engine, "SELECT head_version_id FROM logical_nodes WHERE id = :n", n=logical_node_id
            )
            kind = rng.choices(("endorse", "dispute"), weights=(3, 1))[0]
            ledger.claim(
                ledger.run(rng.choice(PROVIDERS)),
                version_id,
                kind,
                confidence=rng.choice((0.55, 0.8, 0.95)),
                cites=[rng.choice(evidence)],
            )
            done.append(kind)
        return done

    _scalar(engine, "SELECT 1")
    return act


def _build_stress_nodes(ledger: Ledger, rng: random.Random) -> list[tuple[UUID, UUID]]:
    """(logical node, first version) of nodes in a seeded mix of states."""
    shapes = ["ready"] * 8 + ["single"] * 5 + ["bare"] * 3 + ["disputed"] * 4
    rng.shuffle(shapes)
    built = []
    for i, shape in enumerate(shapes):
        if shape in ("ready", "disputed"):
            version_id = ledger.ready_node(f"stress node {i} ({shape})")
        else:
            version_id = UUID(str(ledger.node(f"stress node {i} ({shape})")["version_id"]))
        if shape == "single":
            ledger.claim(ledger.run("anthropic"), version_id, confidence=0.8, cites=[ledger.evidence[0]])
        if shape == "disputed":
            ledger.claim(
                ledger.run("zhipu"), version_id, "dispute", confidence=0.95, cites=[ledger.evidence[2]]
            )
        logical_node_id = _scalar(
            ledger.engine, "SELECT logical_node_id FROM node_versions WHERE id = :v", v=version_id
        )
        built.append((logical_node_id, version_id))
    return built


def test_randomized_stress_keeps_one_live_consolidation_per_node(engine: Engine, db_url: str) -> None:
    seed = int(os.environ.get("COUNCIL_STRESS_SEED") or random.SystemRandom().randrange(2**32))
    print(f"committer stress seed: {seed} (rerun with COUNCIL_STRESS_SEED={seed})")
    rng = random.Random(seed)
    # Given ~20 nodes, some ready, some not
    ledger = Ledger.new(engine)
    built = _build_stress_nodes(ledger, rng)
    assert len(built) == STRESS_NODES
    targets = [logical for logical, _ in rng.sample(built, 8)]
    # When workers consolidate at random while claims and versions keep arriving
    contenders = [(_stress_worker, (db_url, built, f"{seed}-worker-{i}")) for i in range(STRESS_WORKERS)]
    contenders.append((_mutator, (db_url, ledger.thread_id, ledger.evidence, targets, f"{seed}-mutator")))
    raced = race(_dispatch, contenders, start_method=RACE_START_METHOD)
    # Then nobody raised
    assert raced.errors == [], f"seed {seed}"
    answers = [answer for result in raced.results[:STRESS_WORKERS] for answer in result]
    assert {outcome for _, outcome, _ in answers} <= {"committed", "already_consolidated", "not_ready"}
    # And no logical node has more than one live consolidation
    doubled = _rows(
        engine,
        "SELECT logical_node_id, count(*) FROM consolidations WHERE status = 'live' "
        "GROUP BY logical_node_id HAVING count(*) > 1",
    )
    assert doubled == [], f"seed {seed}"
    # And each version has at most one consolidation, the one every caller was told of
    rows = _rows(
        engine,
        "SELECT c.id, c.logical_node_id, c.node_version_id, c.status, v.version_no, s.status AS node_status "
        "FROM consolidations c JOIN node_versions v ON v.id = c.node_version_id "
        "JOIN node_version_states s ON s.id = c.node_version_id",
    )
    by_version = {row.node_version_id: row.id for row in rows}
    assert len(by_version) == len(rows), f"seed {seed}: a version consolidated twice"
    told: dict[UUID, set[UUID]] = defaultdict(set)
    committed: Counter[UUID] = Counter()
    for version_id, outcome, consolidation_id in answers:
        if outcome != "not_ready":
            told[version_id].add(consolidation_id)
        committed[version_id] += outcome == "committed"
    assert all(n <= 1 for n in committed.values()), f"seed {seed}"
    assert {v: ids for v, ids in told.items() if ids != {by_version.get(v)}} == {}, f"seed {seed}"
    # And the live consolidation of a node is of its newest consolidated version
    newest: dict[UUID, int] = defaultdict(int)
    for row in rows:
        newest[row.logical_node_id] = max(newest[row.logical_node_id], row.version_no)
    assert all(row.version_no == newest[row.logical_node_id] for row in rows if row.status == "live")
    # And every consolidated version is resolved, every record replays
    assert {row.node_status for row in rows} <= {"resolved"}, f"seed {seed}"
    evaluations = [row.id for row in _rows(engine, "SELECT id FROM consolidation_evaluations")]
    mismatched = [
        r for r in (replay(uow_of(engine), i) for i in [row.id for row in rows] + evaluations) if not r.match
    ]
    assert mismatched == [], f"seed {seed}"
    # And the run exercised what it claims to: commits, refusals, supersession
    outcomes = Counter(outcome for _, outcome, _ in answers)
    assert outcomes["committed"] >= 1 and outcomes["not_ready"] >= 1, f"seed {seed}: {outcomes}"
    print(f"outcomes {dict(outcomes)}; consolidations {Counter(row.status for row in rows)}")


def _dispatch(prepare: Callable[..., Callable[[], Any]], args: tuple[Any, ...]) -> Callable[[], Any]:
    return prepare(*args)


# ------------------------------------------------------- crash holding the lock


def _commit_then_hang(url: str, version_id: UUID, report: Any) -> None:
    """Run the committer up to its last write, report, and hang inside the
    transaction (the parent SIGKILLs this process)."""
    from council.ledger import committer

    real_write = committer._write

    def commit_then_hang(conn: Any, *args: Any) -> dict[UUID, Any]:
        written = real_write(conn, *args)  # every write of the commit, inside the transaction
        pid = conn.info.backend_pid
        report.put((pid, written[version_id].consolidation_id))
        time.sleep(3600)
        return written

    committer._write = commit_then_hang  # type: ignore[assignment]
    consolidate(uow_of(engine_for(url, pool_size=1)), version_id, actor="doomed")


def test_sigkill_inside_the_commit_leaves_nothing_and_frees_the_lock(engine: Engine, db_url: str) -> None:
    # Given a committer process killed after every write of its commit, before COMMIT
    version_id = Ledger.new(engine).ready_node()
    ctx = mp.get_context("spawn")
    report = ctx.Queue()
    proc = ctx.Process(target=_commit_then_hang, args=(db_url, version_id, report), daemon=True)
    proc.start()
    try:
        backend_pid, doomed_id = report.get(timeout=120)
        held = _rows(
            engine,
            "SELECT l.mode FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.pid = :pid AND l.locktype = 'advisory' AND l.granted "
            "AND a.state = 'idle in transaction'",
            pid=backend_pid,
        )
        assert "ExclusiveLock" in {row.mode for row in held}
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(10)
        assert proc.exitcode == -signal.SIGKILL
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join()
    # When a fresh committer consolidates the node
    started = time.monotonic()
    result = consolidate(uow_of(engine), version_id, actor=ACTOR)
    # Then it is not kept waiting on a dead transaction, and commits
    assert time.monotonic() - started < 5
    assert result.outcome == "committed" and result.consolidation_id != doomed_id
    # And nothing of the killed transaction survived
    assert _rows(engine, "SELECT id FROM consolidations WHERE id = :c", c=doomed_id) == []
    assert _scalar(engine, "SELECT count(*) FROM consolidations") == 1
    assert _scalar(engine, "SELECT count(*) FROM memory_items") == 1
    assert _scalar(engine, "SELECT count(*) FROM events WHERE kind = 'consolidation.committed'") == 1
    assert _scalar(engine, "SELECT count(*) FROM node_status_transitions WHERE to_status = 'resolved'") == 1
    # And the killed backend is gone with no advisory lock left behind
    deadline = time.monotonic() + 10
    while _scalar(engine, "SELECT count(*) FROM pg_stat_activity WHERE pid = :p", p=backend_pid):
        assert time.monotonic() < deadline, "the killed committer's backend is still there"
        time.sleep(0.1)
    leftover = _rows(
        engine,
        "SELECT pid, mode FROM pg_locks WHERE locktype = 'advisory' "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    assert leftover == []


# ---------------------------------------------------------------- the guards

SESSION_LOCK = re.compile(r"\bpg_(?:try_)?advisory_(?:lock|unlock)", re.IGNORECASE)
SESSION_LOCK_FUNCTIONS = (
    "pg_advisory_lock",
    "pg_advisory_lock_shared",
    "pg_try_advisory_lock",
    "pg_try_advisory_lock_shared",
    "pg_advisory_unlock",
    "pg_advisory_unlock_shared",
    "pg_advisory_unlock_all",
)
XACT_LOCK_FUNCTIONS = ("pg_advisory_xact_lock", "pg_advisory_xact_lock_shared", "pg_try_advisory_xact_lock")


def test_no_session_level_advisory_lock_anywhere_in_the_code() -> None:
    # The pattern catches every session-level function and spares the transaction-scoped ones
    assert all(SESSION_LOCK.search(f"SELECT {name}(1)") for name in SESSION_LOCK_FUNCTIONS)
    assert not any(SESSION_LOCK.search(f"SELECT {name}(1)") for name in XACT_LOCK_FUNCTIONS)
    files = [
        path
        for root in ("council", "migrations")
        if (REPO / root).is_dir()
        for path in sorted((REPO / root).rglob("*"))
        if path.suffix in (".py", ".sql")
    ]
    hits = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in files
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if SESSION_LOCK.search(line)
    ]
    assert hits == []
    # And the scan is not vacuous: the transaction-scoped node lock is in what it read
    assert any("pg_advisory_xact_lock(" in path.read_text() for path in files)


@pytest.mark.parametrize("isolation", ["REPEATABLE READ", "SERIALIZABLE"])
def test_committer_refuses_any_isolation_but_read_committed(engine: Engine, isolation: str) -> None:
    version_id = Ledger.new(engine).ready_node()
    with engine.connect() as conn:
        conn.execution_options(isolation_level=isolation)
        with conn.begin(), pytest.raises(CouncilError, match="READ COMMITTED") as refused:
            _consolidate_batch(pq(conn), [version_id], actor=ACTOR, dry_run=False)
    # A permanent refusal (never retried as transient), before anything was written
    assert not isinstance(refused.value, TransientDatabaseError)
    assert _scalar(engine, "SELECT count(*) FROM consolidations") == 0
    assert _scalar(engine, "SELECT count(*) FROM consolidation_evaluations") == 0
