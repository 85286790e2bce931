"""Reentry packet latency on a large thread (docs/architecture.md §6).

One thread in a fresh migrated database: 80,000 logical nodes with 100,000
versions (one in five nodes has a second version, one in twenty a third),
300,000 edges, 500,000 claims from 2,000 runs, 100,000 citations over 500
evidence items, ~500 pending actions, ~32,000 consolidations with their memory
items (half the resolved heads), events, and six branches: main, an active
objective fork, and node forks that are merged, killed, abandoned and active.
Statuses are a realistic mix: most heads are resolved or killed, about 3,400
are open or tentative on live branches.

The data are generated with set-based SQL and go through the ledger's own
triggers: versions create their state rows and move heads, and every status
change is a transition row. The ledger's rules for claims are kept as a
worker keeps them: the runs are running when their claims land, the claiming
transaction holds each run at its attempt (``council_hold_v1``, revision
0041), every claim is written with its ``claim.added`` event, and the runs
then end, succeeded. Set-based SQL rather than the claim store, run by run:
half a million claims through the store would take many minutes of setup and
change nothing the figure reads. The nodes are written in one transaction;
edges, claims with citations, status transitions and the rest then load in
parallel sessions. The database is then vacuumed and analyzed (the steady
state autovacuum keeps a real ledger in).

The figure is the median of ``reentry_packet(uow, thread_id, budget=4000)``
followed by the markdown render, after a warm-up. Target: median ≤ 150 ms.
A smoke run (``COUNCIL_BENCH_SMOKE``) builds the same thread a hundredth the size.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Engine, text

from benchmarks.harness import bench_database, sized
from council.domain.reentry_markdown import render_markdown
from council.services.reentry import reentry_packet
from council.services.threads import create_thread
from tests.engines import engine_for, uow_of

TARGET_MS = 150.0
BUDGET = 4000
WARMUP = 5
CALLS = 30
SEED = 0.42  # setseed(): the same data on every run


@dataclass(frozen=True)
class Shape:
    """How large the thread is. Node numbers (the main line's last, each fork's last) and
    the edges' window scale with ``nodes``; the forks diverge ``fork_step`` apart."""

    nodes: int = 80_000
    runs: int = 2_000
    claims_per_run: int = 250  # 500,000 claims
    evidence: int = 500
    window: int = 1_000  # edges reach back 1-1000, 1001-2000 and 2001-3000 versions
    calls: int = CALLS
    warmup: int = WARMUP

    def at(self, share: float) -> int:
        """The node number at ``share`` of the thread (70,000 of 80,000 at 0.875)."""
        return round(self.nodes * share)

    @property
    def main_last(self) -> int:
        return self.at(0.875)

    @property
    def fork_step(self) -> int:
        return self.nodes // 80

    @property
    def forks(self) -> tuple[tuple[str, str, str, str, int], ...]:
        """Branch slots: (kind, label, divergence_type, final status, last node number).
        Slot 0 is the main line, created by create_thread."""
        return (
            ("objective", "latency-first objective", "objective", "active", self.at(0.925)),
            ("node", "cache-warm reading", "claim", "merged", self.at(0.95)),
            ("node", "replica-lag reading", "evidence_interpretation", "killed", self.at(0.975)),
            ("node", "stricter acceptance", "acceptance_condition", "abandoned", self.at(0.9875)),
            ("node", "batch-size reading", "claim", "active", self.nodes),
        )


FULL = Shape()
# A hundredth of the thread, for a smoke run: 800 nodes, 1,000 versions, 500 claims.
SMOKE = Shape(nodes=800, runs=20, claims_per_run=25, evidence=20, window=100, calls=3, warmup=1)

# ------------------------------------------------------------------ the data

# Scratch tables (unlogged, shared by the loading sessions, dropped afterwards)
# lay the thread out first. Node n belongs to the first slot whose last node
# number is ≥ n; it has three versions when n % 20 = 0, two when n % 5 = 0,
# else one (100,000 in all). Each version draws one number u that decides its
# final status: heads keep their initial open/tentative status with u < 0.045
# (a third of those move open → tentative), are killed below 0.2 and resolved
# above; older versions are mostly orphaned or resolved.
SCRATCH = ("bench_slots", "bench_runs", "bench_nodes", "bench_versions", "bench_evidence", "bench_claims")

PLAN = """
SELECT setseed(:seed);
CREATE UNLOGGED TABLE bench_slots (slot int PRIMARY KEY, id uuid NOT NULL, last_n int NOT NULL);
INSERT INTO bench_slots VALUES (0, :main_branch_id, :main_last);
CREATE UNLOGGED TABLE bench_runs AS
    SELECT r, gen_random_uuid() AS id,
           (ARRAY['anthropic', 'openai', 'google', 'mistral'])[1 + r % 4] AS provider
    FROM generate_series(0, :runs - 1) r;
CREATE UNLOGGED TABLE bench_nodes AS
    SELECT n, gen_random_uuid() AS id,
           CASE WHEN n % 20 = 0 THEN 3 WHEN n % 5 = 0 THEN 2 ELSE 1 END AS versions,
           CASE WHEN n <= :main_last THEN 0
                ELSE 1 + (SELECT count(*) FROM unnest(CAST(:fork_lasts AS int[])) l WHERE l < n)::int
           END AS slot
    FROM generate_series(1, :nodes) n;
CREATE UNLOGGED TABLE bench_versions AS
    SELECT (row_number() OVER (ORDER BY n.n, v))::int AS idx, n.n, v, n.slot, gen_random_uuid() AS id,
           v = n.versions AS head, random() AS u,
           CASE WHEN random() < 0.25 THEN 'tentative' ELSE 'open' END AS initial_status,
           now() - interval '150 days' + make_interval(secs => n.n * 120 + (v - 1) * 86400) AS created_at
    FROM bench_nodes n CROSS JOIN LATERAL generate_series(1, n.versions) v;
ALTER TABLE bench_versions ADD PRIMARY KEY (idx);
CREATE UNIQUE INDEX ON bench_versions (n, v);
ALTER TABLE bench_versions ADD COLUMN final_status text;
UPDATE bench_versions SET final_status = CASE
    WHEN head AND u < 0.015 THEN 'tentative'
    WHEN head AND u < 0.045 THEN initial_status
    WHEN head AND u < 0.2 THEN 'killed'
    WHEN head THEN 'resolved'
    WHEN u < 0.5 THEN 'orphaned'
    WHEN u < 0.8 THEN 'resolved'
    WHEN u < 0.9 THEN 'killed'
    ELSE initial_status END;
CREATE UNLOGGED TABLE bench_evidence AS
    SELECT e, gen_random_uuid() AS id, format(
        'Measurement series %s: p50/p99 latency of workload class %s on the staging replica, %s samples.',
        e, e % 97, 1000 + e * 17) AS content
    FROM generate_series(0, :evidence - 1) e;
CREATE UNLOGGED TABLE bench_claims AS
    SELECT gen_random_uuid() AS id, r, k, 1 + (r * 7919 + k * 401) % :versions AS idx, random() AS u,
           floor(:evidence * power(random(), 3))::int AS evidence_no  -- a few items are cited a lot
    FROM generate_series(0, :runs - 1) r, generate_series(0, :claims_per_run - 1) k;
INSERT INTO agent_runs (id, thread_id, agent, model, provider, mode, status, attempt, lease_owner,
                        created_at, started_at)
    SELECT id, :thread_id, provider || '-' || (r % 5), provider || '/model-' || (r % 3), provider,
           'independent', 'running', 1, 'bench', t, t
    FROM bench_runs, LATERAL (SELECT now() - interval '150 days' + make_interval(secs => r * 6000) AS t) x;
INSERT INTO evidence (id, content_sha256, content, source_kind, byte_size, title)
    SELECT id, encode(sha256(convert_to(content, 'UTF8')), 'hex'), content, 'text', octet_length(content),
           'Measurement series ' || e
    FROM bench_evidence;
INSERT INTO thread_evidence (thread_id, evidence_id, title, added_by)
    SELECT :thread_id, id, 'Measurement series ' || e, 'bench' FROM bench_evidence;
INSERT INTO evidence_transitions (evidence_id, from_status, to_status, reason, actor)
    SELECT id, 'valid', CASE WHEN e % 20 = 3 THEN 'challenged' ELSE 'invalidated' END,
           'benchmark data', 'bench'
    FROM bench_evidence WHERE e % 20 = 3 OR e % 50 = 11;
"""

# Run twice: the main line first, then the forks, whose divergence points are main versions.
NODES_SQL = """
INSERT INTO logical_nodes (id, thread_id, branch_id, created_at)
    SELECT n.id, :thread_id, s.id, v.created_at
    FROM bench_nodes n JOIN bench_slots s USING (slot) JOIN bench_versions v ON v.n = n.n AND v.v = 1
    WHERE (n.slot = 0) = :main;
INSERT INTO node_versions (id, logical_node_id, thread_id, branch_id, version_no, parent_version_id, content,
                           content_sha256, initial_status, created_by_run_id, created_at)
    SELECT v.id, n.id, :thread_id, s.id, v.v, p.id, c.content,
           encode(sha256(convert_to(c.content, 'UTF8')), 'hex'), v.initial_status, r.id, v.created_at
    FROM bench_versions v
    JOIN bench_nodes n ON n.n = v.n
    JOIN bench_slots s ON s.slot = v.slot
    JOIN bench_runs r ON r.r = v.idx % :runs
    LEFT JOIN bench_versions p ON p.n = v.n AND p.v = v.v - 1
    CROSS JOIN LATERAL (SELECT format(
        'Proposition %s (revision %s): the adapter keeps workload class %s within its latency budget '
        'while replica lag stays under %s ms and the cache is warm, per the linked measurements.',
        v.n, v.v, v.n % 97, 10 + v.n % 90) AS content) c
    WHERE (v.slot = 0) = :main
    ORDER BY v.v, v.n;
"""

FORK_SQL = """
WITH b AS (
    INSERT INTO branches (thread_id, kind, parent_branch_id, fork_version_id, divergence_type, objective,
                          label, created_at)
    SELECT :thread_id, :kind, :main_branch_id, v.id, :divergence_type,
           CASE WHEN :kind = 'objective' THEN 'Minimise p99 latency rather than cost' END, :label,
           v.created_at + interval '1 hour'
    FROM bench_versions v WHERE v.n = :fork_n AND v.v = 1
    RETURNING id
)
INSERT INTO bench_slots SELECT :slot, b.id, :last_n FROM b
"""

CLOSE_SQL = """
INSERT INTO branch_transitions (branch_id, from_status, to_status, reason, actor)
    SELECT id, 'active', :status, :reason, 'bench' FROM bench_slots WHERE slot = :slot
"""

# Once the nodes are committed these are independent: each runs in its own
# session, concurrently (the load is CPU-bound in the triggers and key checks).
TRANSITIONS_SQL = """
INSERT INTO node_status_transitions (node_version_id, from_status, to_status, reason, actor, created_at)
    SELECT id, initial_status, final_status, 'benchmark data', 'bench',
           created_at + make_interval(secs => 3600 + u * 86400 * 20)
    FROM bench_versions WHERE final_status <> initial_status ORDER BY idx;
"""

# Three edges out of every version, to versions 1-1000, 1001-2000 and 2001-3000
# places earlier (the window, 1,000 here, scales with the thread; so no pair
# repeats): a depends_on, a depends_on, supports or refines, and a supports,
# refines or contradicts.
EDGES_SQL = """
SELECT setseed(:seed);
INSERT INTO edges (thread_id, branch_id, kind, from_version_id, to_version_id, created_at)
    SELECT :thread_id, s.id, e.kind, f.id, t.id, f.created_at
    FROM (SELECT v.idx, 1 + (v.idx - 1 - (1 + j * :window + floor(random() * :window))::int + :versions)
                     % :versions
                     AS to_idx,
                 CASE WHEN j = 0 THEN 'depends_on' ELSE
                     (ARRAY['depends_on', 'supports', 'refines', 'contradicts'])[j + floor(random() * 3)::int]
                 END AS kind
          FROM bench_versions v CROSS JOIN generate_series(0, 2) j) e
    JOIN bench_versions f ON f.idx = e.idx
    JOIN bench_versions t ON t.idx = e.to_idx
    JOIN bench_slots s ON s.slot = f.slot
    ON CONFLICT DO NOTHING;
"""

# Run r claims versions (r * 7919 + k * 401) mod 100,000 for k < 250: distinct within a run.
# As a worker writes them: the transaction holds every run at its attempt (revision 0041:
# a claim is accepted only from a running run its transaction holds), each claim comes
# with its claim.added event, and the runs then end, succeeded, 40 seconds after they began.
CLAIMS_SQL = """
SELECT setseed(:seed);
SELECT count(*) FROM bench_runs WHERE council_hold_v1(id, 1);
INSERT INTO claims (id, run_id, node_version_id, claim_type, confidence, rationale, created_at)
    SELECT c.id, r.id, v.id, x.claim_type, round(CAST(0.3 + 0.7 * random() AS numeric), 3),
           CASE WHEN x.claim_type = 'dispute' THEN format(
               'Run %s disputes proposition %s: the measurement window is too short to rule out cold caches.',
               c.r, v.n) ELSE '' END,
           v.created_at + make_interval(secs => 60 + c.k)
    FROM bench_claims c JOIN bench_runs r USING (r) JOIN bench_versions v USING (idx)
    CROSS JOIN LATERAL (SELECT CASE WHEN c.u < 0.03 THEN 'originate' WHEN c.u < 0.6 THEN 'endorse'
                                    WHEN c.u < 0.88 THEN 'dispute' ELSE 'abstain' END AS claim_type) x;
INSERT INTO citations (node_version_id, evidence_id, branch_id, claim_id, run_id, role, created_at)
    SELECT v.id, e.id, s.id, c.id, r.id,
           CASE WHEN c.u >= 0.6 AND c.u < 0.88 THEN 'contradicts' WHEN c.k % 4 = 0 THEN 'context'
                ELSE 'supports' END,
           v.created_at + make_interval(secs => 60 + c.k)
    FROM bench_claims c JOIN bench_runs r USING (r) JOIN bench_versions v USING (idx)
    JOIN bench_slots s ON s.slot = v.slot
    JOIN bench_evidence e ON e.e = c.evidence_no
    WHERE c.k % 5 = 0;
INSERT INTO events (thread_id, kind, subject_id, actor, payload, created_at)
    SELECT :thread_id, 'claim.added', CAST(c.id AS text), 'bench',
           jsonb_build_object('run_id', CAST(c.run_id AS text),
                              'node_version_id', CAST(c.node_version_id AS text),
                              'claim_type', c.claim_type, 'confidence', c.confidence,
                              'citations', CASE WHEN b.k % 5 = 0 THEN 1 ELSE 0 END),
           c.created_at
    FROM bench_claims b JOIN claims c ON c.id = b.id
    ORDER BY c.created_at, c.id;
UPDATE agent_runs
    SET status = 'succeeded', finished_at = started_at + interval '40 seconds', lease_owner = NULL
    WHERE id IN (SELECT id FROM bench_runs);
"""

# Half the resolved heads were consolidated (each gets its memory item).
REST_SQL = """
INSERT INTO merges (thread_id, source_branch_id, target_branch_id, rationale, actor)
    SELECT :thread_id, s.id, :main_branch_id, 'The cache-warm reading holds on the main line too.', 'bench'
    FROM bench_slots s JOIN branches b ON b.id = s.id WHERE b.status = 'merged';
INSERT INTO pending_actions (thread_id, branch_id, node_version_id, description, acceptance_condition,
                             created_at)
    SELECT :thread_id, s.id, v.id,
           format('Re-measure workload class %s with a cold cache', v.n % 97),
           format('p99 below %s ms over at least 10,000 requests', 50 + v.n % 200),
           v.created_at + interval '2 hours'
    FROM bench_versions v JOIN bench_slots s USING (slot)
    WHERE v.head AND v.final_status IN ('open', 'tentative') AND v.idx % 7 = 0;
INSERT INTO pending_action_transitions (pending_action_id, from_status, to_status, reason, actor)
    SELECT id, 'open', CASE WHEN rn % 2 = 0 THEN 'satisfied' ELSE 'cancelled' END, 'benchmark data', 'bench'
    FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS rn
          FROM pending_actions WHERE thread_id = :thread_id) a
    WHERE rn % 3 = 0;
INSERT INTO consolidations (thread_id, logical_node_id, node_version_id, rule_set_id, grouping_algorithm_id,
                            snapshot, snapshot_sha256, decision, created_at, status_changed_at)
    SELECT :thread_id, n.id, v.id, 'council-default-v1', 'indep-v1',
           jsonb_build_object('node_version_id', v.id),
           encode(sha256(convert_to(CAST(v.id AS text), 'UTF8')), 'hex'),
           jsonb_build_object('outcome', 'committed'),
           v.created_at + interval '1 day', v.created_at + interval '1 day'
    FROM bench_versions v JOIN bench_nodes n USING (n)
    WHERE v.head AND v.final_status = 'resolved' AND v.idx % 2 = 0;
INSERT INTO memory_items (thread_id, consolidation_id, logical_node_id, node_version_id, content, created_at,
                          status_changed_at)
    SELECT c.thread_id, c.id, c.logical_node_id, c.node_version_id, nv.content, c.created_at, c.created_at
    FROM consolidations c JOIN node_versions nv ON nv.id = c.node_version_id
    WHERE c.thread_id = :thread_id;
INSERT INTO memory_transitions (memory_item_id, from_status, to_status, reason, actor)
    SELECT id, 'stable', (ARRAY['contested', 'provisional', 'superseded'])[1 + rn / 4 % 3],
           'benchmark data', 'bench'
    FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS rn
          FROM memory_items WHERE thread_id = :thread_id) m
    WHERE rn % 4 = 0;
INSERT INTO events (thread_id, kind, subject_id, actor, payload, created_at)
    SELECT :thread_id, CASE WHEN v.v = 1 THEN 'node.created' ELSE 'node.versioned' END, CAST(v.id AS text),
           'bench',
           CASE WHEN v.v = 1
                THEN jsonb_build_object('logical_node_id', CAST(n.id AS text),
                                        'branch_id', CAST(s.id AS text), 'status', v.initial_status)
                ELSE jsonb_build_object('logical_node_id', CAST(n.id AS text), 'version_no', v.v,
                                        'parent_version_id', CAST(p.id AS text))
           END,
           v.created_at
    FROM bench_versions v JOIN bench_nodes n ON n.n = v.n JOIN bench_slots s ON s.slot = v.slot
    LEFT JOIN bench_versions p ON p.n = v.n AND p.v = v.v - 1
    WHERE v.idx % 10 = 0 ORDER BY v.idx;
"""

SIZES = (
    "branches",
    "logical_nodes",
    "node_versions",
    "node_status_transitions",
    "edges",
    "agent_runs",
    "claims",
    "evidence",
    "citations",
    "pending_actions",
    "consolidations",
    "memory_items",
    "events",
)


def populate(engine: Engine, seed: float = SEED, shape: Shape = FULL) -> UUID:
    """Fill a fresh database with the benchmark thread; returns its id."""
    thread = create_thread(
        uow_of(engine),
        title="frontier benchmark",
        objective="Does the adapter meet its latency budget on every workload class?",
        actor="bench",
    )
    binds: dict[str, Any] = {
        "thread_id": thread.id,
        "main_branch_id": thread.main_branch_id,
        "seed": seed,
        "main_last": shape.main_last,
        "fork_lasts": [last for *_, last in shape.forks],
        "nodes": shape.nodes,
        # bench_nodes.versions, summed: the claims and edges address versions by number
        "versions": sum(1 + (n % 5 == 0) + (n % 20 == 0) for n in range(1, shape.nodes + 1)),
        "runs": shape.runs,
        "claims_per_run": shape.claims_per_run,
        "evidence": shape.evidence,
        "window": shape.window,
    }

    def execute(conn: Connection, script: str, **params: Any) -> None:
        for statement in filter(str.strip, script.split(";\n")):
            clause = text(statement)
            values = {**binds, **params}
            conn.execute(clause, {name: values[name] for name in clause.compile().params})

    def in_transaction(script: str) -> None:
        with engine.begin() as conn:
            execute(conn, script)

    with engine.begin() as conn:
        execute(conn, PLAN)
        execute(conn, NODES_SQL, main=True)
        for slot, (kind, label, divergence, _status, last_n) in enumerate(shape.forks, start=1):
            # Each fork diverges at a main-line version; the nodes it then holds are its own.
            fork = {"kind": kind, "label": label, "divergence_type": divergence, "last_n": last_n}
            execute(conn, FORK_SQL, slot=slot, fork_n=shape.main_last - shape.fork_step * slot, **fork)
        execute(conn, NODES_SQL, main=False)
        for slot, (_kind, label, _divergence, status, _last) in enumerate(shape.forks, start=1):
            if status != "active":
                reason = f"benchmark: the {label} was {status}"
                execute(conn, CLOSE_SQL, slot=slot, status=status, reason=reason)
    scripts = (EDGES_SQL, CLAIMS_SQL, TRANSITIONS_SQL, REST_SQL)  # longest first
    with ThreadPoolExecutor(max_workers=len(scripts)) as pool:
        for future in [pool.submit(in_transaction, script) for script in scripts]:
            future.result()
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("DROP TABLE " + ", ".join(SCRATCH)))
        conn.execute(text("VACUUM (ANALYZE)"))
    return thread.id


def sizes(engine: Engine, thread_id: UUID) -> dict[str, int]:
    with engine.connect() as conn:
        counts = {name: conn.execute(text(f"SELECT count(*) FROM {name}")).scalar_one() for name in SIZES}
        counts["open_or_tentative_heads_on_live_branches"] = conn.execute(
            text(
                "SELECT count(*) FROM logical_nodes ln "
                "JOIN node_version_states s ON s.id = ln.head_version_id "
                "JOIN branches b ON b.id = ln.branch_id "
                "WHERE ln.thread_id = :t AND s.status IN ('open', 'tentative') "
                "AND b.status IN ('active', 'merged')"
            ),
            {"t": thread_id},
        ).scalar_one()
    return counts


@contextmanager
def _sql_timer() -> Iterator[list[float]]:
    """Seconds spent in psycopg's ``Cursor.execute`` (the database round trips), appended per
    statement: the reads run on the unit of work's psycopg connection, not through
    SQLAlchemy's execution events (which saw none of them, and read 0)."""
    import psycopg

    spent: list[float] = []
    original = psycopg.Cursor.execute

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent.append(time.perf_counter() - started)

    psycopg.Cursor.execute = timed  # type: ignore[method-assign]
    try:
        yield spent
    finally:
        psycopg.Cursor.execute = original  # type: ignore[method-assign]


def measure(engine: Engine, thread_id: UUID, calls: int = CALLS, warmup: int = WARMUP) -> dict[str, Any]:
    uow = uow_of(engine)
    totals, sql, renders = [], [], []
    packet = None
    with _sql_timer() as spent:
        for i in range(warmup + calls):
            spent.clear()
            started = time.perf_counter()
            packet = reentry_packet(uow, thread_id, budget=BUDGET)
            built = time.perf_counter()
            render_markdown(packet)
            done = time.perf_counter()
            if i >= warmup:
                totals.append((done - started) * 1000)
                sql.append(sum(spent) * 1000)
                renders.append((done - built) * 1000)
    assert packet is not None
    return {
        "median_ms": round(statistics.median(totals), 2),
        "p95_ms": round(_p95(totals), 2),
        "sql_median_ms": round(statistics.median(sql), 2),
        "render_median_ms": round(statistics.median(renders), 2),
        "packet": {
            "head_count": packet.head_count,
            "heads": len(packet.heads),
            "counterarguments": len(packet.counterarguments),
            "actions": len(packet.actions),
            "dependencies": len(packet.dependencies),
            "evidence": len(packet.evidence),
            "branches": len(packet.branches),
            "memory": len(packet.memory),
            "estimated_tokens": packet.estimated_tokens,
            "left_out": {item.section: item.count for item in packet.left_out},
        },
    }


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def run(calls: int | None = None, target_ms: float = TARGET_MS) -> dict[str, Any]:
    shape = sized(FULL, SMOKE)
    calls = calls or shape.calls
    with bench_database() as (url, server):
        engine = engine_for(url)
        started = time.perf_counter()
        thread_id = populate(engine, shape=shape)
        setup_s = time.perf_counter() - started
        load = os.getloadavg()[0]  # the figures are wall-clock: say how busy the machine was
        measured = measure(engine, thread_id, calls=calls, warmup=shape.warmup)
        counts = sizes(engine, thread_id)
    return {
        "benchmark": "frontier",
        "ok": measured["median_ms"] <= target_ms,
        "target": f"median reentry_packet(budget={BUDGET}) + markdown render ≤ {target_ms:g} ms",
        "target_ms": target_ms,
        **measured,
        "calls": calls,
        "warmup": shape.warmup,
        "sizes": counts,
        "setup_s": round(setup_s, 1),
        "server": server,
        "load_avg_1m": round(load, 1),
    }
