"""Reversal throughput: one evidence item invalidated under 10,000 live consolidations (architecture §5).

**Data.** A fresh migrated database holds one thread with 10,000 open nodes.
Each node has two endorsing runs of two providers (anthropic, openai). Run A
cites the shared evidence E plus an item of its own. Run B cites E plus
another item of its own, except on every fifth node, where it cites E alone.
Nodes, runs, claims, citations and evidence are written with set-based SQL
through the ledger's triggers (versions create their state rows and move
heads), under the ledger's rules for claims (``HELD_CLAIMS``: each run running
and held by the claiming transaction, each claim with its ``claim.added``
event, the runs then succeeded), as a worker's output would leave them.

**Consolidation.** Every consolidation is then made by the real committer
(``council.services.consolidation.consolidate``) in a few spawned processes, so the
snapshots, evidence index and memory items are real, not templated. This is
setup and is not timed; it takes a minute or two on a small machine.

**Measurement.** One call of the real service,
``council.services.reversal.change_validity(uow, None, E, action="invalidate")``.
There is no queue, so any cascade continuation runs inline.
- Material (every fifth node): run B's support rested only on E, so one
  support group is left. The memory becomes contested and a retraction
  proposal opens.
- Immaterial (the rest): each run still has an item of its own and the
  decision survives. The memory goes stable → provisional → stable, with the
  check recorded.
- The nodes have no dependents, so the cascade only looks up the dependents
  of the 2,000 contested versions.

**Figures.**
- Affected consolidations processed per second over the whole call. Target:
  ≥ 1,000/s.
- The duration of each kind of transaction the call runs, each bounded: the
  evidence transaction (lock, transition, index lookup), the reassessment
  transactions (a batch of consolidations under their node locks), and the
  cascade steps. The largest of these is reported as the largest single step.

**Check.** Finally the ledger is counted. Each of the 10,000 memory items
must have ended where its case says, with its transitions, events and
proposals: nothing lost. A smoke run (``COUNCIL_BENCH_SMOKE``) does all of it on
20 nodes.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Engine, text

import council.ledger.cascade as ledger_cascade
import council.services.reversal as service_reversal
from benchmarks.harness import bench_database, race, sized
from council.ledger.reversal import Reversal
from council.services.consolidation import consolidate
from council.services.evidence import EvidenceInput, add_evidence
from council.services.threads import create_thread
from tests.engines import engine_for, uow_of

NODES = 10_000
MATERIAL_EVERY = 5  # run B cites E alone on every fifth node
COMMITTERS = 4
TARGET_PER_S = 1_000.0
ACTOR = "bench"

# The end of a fixture's claiming transaction, as a worker's output ends (revision 0041): the
# transaction already holds each run at its attempt (council_hold_v1, before the claims); now
# every claim gets its claim.added event (its citations counted) and the runs end, succeeded.
# {table} lays out the nodes: claim_a of run_a and claim_b of run_b on version_id.
HELD_CLAIMS = """
INSERT INTO events (thread_id, kind, subject_id, actor, payload)
    SELECT r.thread_id, 'claim.added', CAST(c.id AS text), :actor,
           jsonb_build_object('run_id', CAST(c.run_id AS text),
                              'node_version_id', CAST(c.node_version_id AS text),
                              'claim_type', c.claim_type, 'confidence', c.confidence,
                              'citations', (SELECT count(*) FROM citations ci WHERE ci.claim_id = c.id))
    FROM {table} b
    JOIN claims c ON c.id IN (b.claim_a, b.claim_b)
    JOIN agent_runs r ON r.id = c.run_id
    ORDER BY b.n, c.id;
UPDATE agent_runs SET status = 'succeeded', finished_at = now(), lease_owner = NULL
    WHERE id IN (SELECT run_a FROM {table} UNION ALL SELECT run_b FROM {table})
"""

# Scratch table (unlogged) laying out the nodes; kept until the final count.
PLAN = """
CREATE UNLOGGED TABLE bench_cascade AS
    SELECT n, n % :material_every = 0 AS material,
           gen_random_uuid() AS node_id, gen_random_uuid() AS version_id,
           gen_random_uuid() AS run_a, gen_random_uuid() AS run_b,
           gen_random_uuid() AS claim_a, gen_random_uuid() AS claim_b,
           gen_random_uuid() AS evidence_a, gen_random_uuid() AS evidence_b,
           format('Proposition %s: the replica keeps workload class %s under its latency budget.',
                  n, n % 97) AS content
    FROM generate_series(1, :nodes) n;
CREATE UNIQUE INDEX ON bench_cascade (version_id);
INSERT INTO evidence (id, content_sha256, content, source_kind, byte_size, title)
    SELECT id, encode(sha256(convert_to(body, 'UTF8')), 'hex'), body, 'text', octet_length(body), title
    FROM bench_cascade,
         LATERAL (VALUES (evidence_a, format('Measurement A of proposition %s', n), 'measurement A ' || n),
                         (evidence_b, format('Measurement B of proposition %s', n), 'measurement B ' || n))
                 AS x(id, body, title)
    WHERE id = evidence_a OR NOT material;
INSERT INTO thread_evidence (thread_id, evidence_id, title, added_by)
    SELECT :thread_id, id, title, :actor
    FROM bench_cascade,
         LATERAL (VALUES (evidence_a, 'measurement A ' || n), (evidence_b, 'measurement B ' || n))
                 AS x(id, title)
    WHERE id = evidence_a OR NOT material;
INSERT INTO agent_runs (id, thread_id, agent, model, provider, mode, status, attempt, lease_owner, started_at)
    SELECT id, :thread_id, provider, model, provider, 'independent', 'running', 1, :actor, now()
    FROM bench_cascade,
         LATERAL (VALUES (run_a, 'anthropic', 'anthropic/claude-sonnet-4-6'),
                         (run_b, 'openai', 'openai/gpt-5.5')) AS x(id, provider, model);
INSERT INTO logical_nodes (id, thread_id, branch_id)
    SELECT node_id, :thread_id, :branch_id FROM bench_cascade ORDER BY n;
INSERT INTO node_versions (id, logical_node_id, thread_id, branch_id, version_no, content, content_sha256,
                           initial_status)
    SELECT version_id, node_id, :thread_id, :branch_id, 1, content,
           encode(sha256(convert_to(content, 'UTF8')), 'hex'), 'open'
    FROM bench_cascade ORDER BY n;
SELECT count(*) FROM bench_cascade WHERE council_hold_v1(run_a, 1) AND council_hold_v1(run_b, 1);
INSERT INTO claims (id, run_id, node_version_id, claim_type, confidence)
    SELECT x.id, x.run_id, version_id, 'endorse', 0.8
    FROM bench_cascade, LATERAL (VALUES (claim_a, run_a), (claim_b, run_b)) AS x(id, run_id);
INSERT INTO citations (node_version_id, evidence_id, branch_id, claim_id, run_id, role)
    SELECT version_id, x.evidence_id, :branch_id, x.claim_id, x.run_id, 'supports'
    FROM bench_cascade,
         LATERAL (VALUES (claim_a, run_a, CAST(:shared AS uuid)), (claim_a, run_a, evidence_a),
                         (claim_b, run_b, CAST(:shared AS uuid)), (claim_b, run_b, evidence_b))
                 AS x(claim_id, run_id, evidence_id)
    WHERE NOT (material AND x.evidence_id = evidence_b);
""" + HELD_CLAIMS.format(table="bench_cascade")

# After the invalidation: what became of every memory item of the benchmark's nodes.
COUNT = """
SELECT count(*) AS items,
       count(*) FILTER (WHERE b.material AND m.status = 'contested' AND p.id IS NOT NULL
                        AND t.to_status = 'contested') AS contested_with_proposal,
       count(*) FILTER (WHERE NOT b.material AND m.status = 'stable' AND t.from_status = 'provisional'
                        AND t.to_status = 'stable' AND t.details ->> 'check' = 'immaterial'
                        AND t.details -> 'removed' = to_jsonb(ARRAY[CAST(:shared AS text)]))
           AS stable_checked,
       count(*) FILTER (WHERE t.id IS NULL) AS untouched,
       (SELECT count(*) FROM memory_transitions WHERE actor = :actor) AS transitions,
       (SELECT count(*) FROM events WHERE actor = :actor AND kind LIKE 'memory.%') AS memory_events,
       (SELECT count(*) FROM events WHERE actor = :actor AND kind = 'retraction.proposed') AS proposal_events
FROM bench_cascade b
JOIN memory_items m ON m.node_version_id = b.version_id
LEFT JOIN LATERAL (SELECT * FROM memory_transitions mt WHERE mt.memory_item_id = m.id
                   ORDER BY mt.created_at DESC, mt.id DESC LIMIT 1) t ON true
LEFT JOIN retraction_proposals p ON p.consolidation_id = m.consolidation_id AND p.status = 'open'
"""


def populate(engine: Engine, nodes: int = NODES) -> tuple[UUID, list[str]]:
    """The thread, its shared evidence E and ``nodes`` ready nodes: returns (E, version ids)."""
    uow = uow_of(engine)
    thread = create_thread(
        uow,
        title="cascade benchmark",
        objective="Does the replica keep every workload class under its latency budget?",
        actor=ACTOR,
    )
    shared = add_evidence(
        uow,
        thread.id,
        EvidenceInput(
            text="The shared load-generator calibration every measurement relied on.",
            title="load-generator calibration",
        ),
        actor=ACTOR,
    ).id
    binds = {
        "thread_id": thread.id,
        "branch_id": thread.main_branch_id,
        "shared": shared,
        "nodes": nodes,
        "material_every": MATERIAL_EVERY,
        "actor": ACTOR,
    }
    with engine.begin() as conn:
        _execute(conn, PLAN, binds)
        versions = conn.execute(text("SELECT version_id FROM bench_cascade ORDER BY n")).scalars()
        return shared, [str(v) for v in versions]


def _execute(conn: Connection, script: str, binds: dict[str, Any]) -> None:
    for statement in filter(str.strip, script.split(";\n")):
        clause = text(statement)
        conn.execute(clause, {name: binds[name] for name in clause.compile().params})


def committer(url: str, versions: list[str], actor: str) -> Callable[[], dict[str, int]]:
    """Prepare one committer process (spawned by ``race``): its own engine and slice of versions."""
    uow = uow_of(engine_for(url, pool_size=1))
    return lambda: dict(Counter(consolidate(uow, UUID(v), actor=actor).outcome for v in versions))


def consolidate_all(url: str, versions: list[str], processes: int = COMMITTERS) -> dict[str, Any]:
    raced = race(
        committer,
        [(url, versions[i::processes], f"{ACTOR}: committer {i}") for i in range(processes)],
        timeout=1800,
    )
    if raced.errors:
        raise RuntimeError("committing the benchmark's nodes failed:\n" + "\n".join(raced.errors[:3]))
    outcomes: Counter[str] = Counter()
    for result in raced.results:
        outcomes.update(result or {})
    return {
        "outcomes": dict(outcomes),
        "seconds": round(raced.elapsed_s, 1),
        "per_s": round(sum(outcomes.values()) / raced.elapsed_s, 1),
        "processes": processes,
    }


@contextmanager
def _timed(owner: Any, name: str, sink: list[tuple[float, float, Any]]) -> Iterator[None]:
    """Record (start, seconds, result) of every call of ``owner.name`` (a module's
    function or a class's method) while inside."""
    original = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        result = original(*args, **kwargs)
        sink.append((started, time.perf_counter() - started, result))
        return result

    setattr(owner, name, timed)
    try:
        yield
    finally:
        setattr(owner, name, original)


def invalidate(engine: Engine, evidence_id: UUID) -> dict[str, Any]:
    """Invalidate E through the real service, timing the work of each transaction it
    runs (a reassessment batch under its node locks; every cascade step)."""
    reassessed: list[tuple[float, float, Any]] = []
    steps: list[tuple[float, float, Any]] = []
    with (
        _timed(Reversal, "reassess", reassessed),
        _timed(ledger_cascade, "step", steps),  # every step, the first and its continuations
    ):
        started = time.perf_counter()
        result = service_reversal.change_validity(
            uow_of(engine),
            None,
            evidence_id,
            action="invalidate",
            reason="the load generator was miscalibrated",
            actor=ACTOR,
        )
        elapsed = time.perf_counter() - started
    affected = result.affected
    # The evidence transaction (lock, transition, index lookup) ends before the first reassessment.
    evidence_s = min((s for s, _, _ in reassessed), default=started + elapsed) - started
    durations = sorted(d for _, d, _ in reassessed)
    _, slowest_s, (slowest_batch, _) = max(reassessed, key=lambda r: r[1])
    return {
        "affected": len(affected),
        "elapsed_s": round(elapsed, 3),
        "per_s": round(len(affected) / elapsed, 1),
        "evidence_transaction_ms": round(evidence_s * 1000, 1),
        "reassess": {
            "transactions": len(reassessed),
            "batch": service_reversal.REASSESS_BATCH,
            "workers": service_reversal.REASSESS_WORKERS,
            "median_ms": round(statistics.median(durations) * 1000, 1),
            "slowest_ms": round(slowest_s * 1000, 1),
            "slowest_consolidations": len(slowest_batch),
        },
        "cascade_steps": len(steps),
        "cascade_step_slowest_ms": round(max(d for _, d, _ in steps) * 1000, 1),
        "largest_step_ms": round(max(evidence_s, slowest_s, *(d for _, d, _ in steps)) * 1000, 1),
        "cascade": result.cascade.json_document(),
        "memory_status": dict(Counter(a.memory_status for a in affected)),
        "material": sum(1 for a in affected if a.material),
        "proposals": len(result.proposals),
    }


def count(engine: Engine, evidence_id: UUID) -> dict[str, int]:
    with engine.connect() as conn:
        row = conn.execute(text(COUNT), {"shared": str(evidence_id), "actor": ACTOR}).mappings().one()
    return dict(row)


def run(nodes: int | None = None, target_per_s: float = TARGET_PER_S) -> dict[str, Any]:
    nodes = nodes or sized(NODES, 20)
    with bench_database() as (url, server):
        engine = engine_for(url)
        started = time.perf_counter()
        evidence_id, versions = populate(engine, nodes)
        generated_s = time.perf_counter() - started
        committed = consolidate_all(url, versions, processes=sized(COMMITTERS, 2))
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM (ANALYZE)"))
            indexed = conn.execute(
                text("SELECT count(*) FROM consolidation_evidence WHERE evidence_id = :e"), {"e": evidence_id}
            ).scalar_one()
        load = os.getloadavg()[0]  # wall-clock figures: say how busy the machine was
        measured = invalidate(engine, evidence_id)
        counted = count(engine, evidence_id)
    material = nodes // MATERIAL_EVERY
    complete = (
        indexed == nodes
        and counted["items"] == nodes
        and counted["contested_with_proposal"] == material
        and counted["stable_checked"] == nodes - material
        and counted["untouched"] == 0
        # one move to contested, or two (to provisional and back), each with its event
        and counted["transitions"] == counted["memory_events"] == material + 2 * (nodes - material)
        and counted["proposal_events"] == material
    )
    return {
        "benchmark": "cascade",
        "ok": complete and measured["per_s"] >= target_per_s,
        "target": f"≥ {target_per_s:g} affected consolidations/s for one invalidation under {nodes:,}",
        "target_per_s": target_per_s,
        **measured,
        "complete": complete,
        "counted": counted,
        "consolidations_indexed_on_evidence": indexed,
        "setup": {"generate_s": round(generated_s, 1), "commit": committed},
        "server": server,
        "load_avg_1m": round(load, 1),
    }
