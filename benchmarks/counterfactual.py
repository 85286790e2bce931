"""Counterfactual replay: stored decisions re-decided per second under another rule set (issue 20).

**Data.** A fresh migrated database holds one thread with 10,000 open nodes,
each endorsed by two runs, each run citing an evidence item of its own. On
every fifth node the runs are of two providers (anthropic, openai): ready
under the default rules. On the rest both are anthropic: not ready (one
provider). Nodes, runs, claims, citations and evidence are written with
set-based SQL through the ledger's triggers, under its rules for claims (as in
``benchmarks/cascade.py``: runs held while they claim, each claim with its
event); every node is then decided by
the real committer (``consolidate_many``), so the 2,000 consolidations and
8,000 not-ready evaluations (manifests, hashes, reasons) are real. Setup is
not timed.

**Measurement.** One call of the real service,
``council.services.counterfactual.counterfactual``, over all 10,000 stored
decisions under a stricter rule set ("three independent groups"): every
stored snapshot rebuilt from the rows it names, checked against its stored
hash, and decided under its pinned rules and the candidate. The same call
under the stored default rule set is timed too.

**Figures.** Decisions re-decided per second (target: 10,000 in under 5 s,
i.e. ≥ 2,000/s), with the client's CPU time for the call (the Python side:
rebuilding, hashing, grouping, deciding) and the load average, since the
figure is wall-clock on a shared machine. **Check.** Under the default: zero changes, all 10,000
reproduced; under the stricter rules: exactly the 2,000 consolidations change.
A smoke run (``COUNCIL_BENCH_SMOKE``) does the same on 20 nodes.
"""

from __future__ import annotations

import os
import time
from typing import Any
from uuid import UUID

from sqlalchemy import Engine, text

from benchmarks.cascade import HELD_CLAIMS, _execute
from benchmarks.harness import bench_database, sized
from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate_many
from council.services.counterfactual import counterfactual
from council.services.threads import create_thread
from tests.engines import engine_for, uow_of

NODES = 10_000
READY_EVERY = 5
TARGET_PER_S = 2_000.0
ACTOR = "bench"

PLAN = """
CREATE UNLOGGED TABLE bench_counterfactual AS
    SELECT n, n % :ready_every = 0 AS ready,
           gen_random_uuid() AS node_id, gen_random_uuid() AS version_id,
           gen_random_uuid() AS run_a, gen_random_uuid() AS run_b,
           gen_random_uuid() AS claim_a, gen_random_uuid() AS claim_b,
           gen_random_uuid() AS evidence_a, gen_random_uuid() AS evidence_b,
           format('Proposition %s: the replica keeps workload class %s under its latency budget.',
                  n, n % 97) AS content
    FROM generate_series(1, :nodes) n;
INSERT INTO evidence (id, content_sha256, content, source_kind, byte_size, title)
    SELECT id, encode(sha256(convert_to(body, 'UTF8')), 'hex'), body, 'text', octet_length(body), body
    FROM bench_counterfactual,
         LATERAL (VALUES (evidence_a, format('Measurement A of proposition %s', n)),
                         (evidence_b, format('Measurement B of proposition %s', n))) AS x(id, body);
INSERT INTO thread_evidence (thread_id, evidence_id, title, added_by)
    SELECT :thread_id, id, 'measurement', :actor
    FROM bench_counterfactual, LATERAL (VALUES (evidence_a), (evidence_b)) AS x(id);
INSERT INTO agent_runs (id, thread_id, agent, model, provider, mode, status, attempt, lease_owner, started_at)
    SELECT id, :thread_id, provider, model, provider, 'independent', 'running', 1, :actor, now()
    FROM bench_counterfactual,
         LATERAL (VALUES (run_a, 'anthropic', 'anthropic/claude-sonnet-4-6'),
                         (run_b, CASE WHEN ready THEN 'openai' ELSE 'anthropic' END,
                                 CASE WHEN ready THEN 'openai/gpt-5.5' ELSE 'anthropic/claude-opus-4-6' END))
                 AS x(id, provider, model);
INSERT INTO logical_nodes (id, thread_id, branch_id)
    SELECT node_id, :thread_id, :branch_id FROM bench_counterfactual ORDER BY n;
INSERT INTO node_versions (id, logical_node_id, thread_id, branch_id, version_no, content, content_sha256,
                           initial_status)
    SELECT version_id, node_id, :thread_id, :branch_id, 1, content,
           encode(sha256(convert_to(content, 'UTF8')), 'hex'), 'open'
    FROM bench_counterfactual ORDER BY n;
SELECT count(*) FROM bench_counterfactual WHERE council_hold_v1(run_a, 1) AND council_hold_v1(run_b, 1);
INSERT INTO claims (id, run_id, node_version_id, claim_type, confidence)
    SELECT x.id, x.run_id, version_id, 'endorse', 0.8
    FROM bench_counterfactual, LATERAL (VALUES (claim_a, run_a), (claim_b, run_b)) AS x(id, run_id);
INSERT INTO citations (node_version_id, evidence_id, branch_id, claim_id, run_id, role)
    SELECT version_id, x.evidence_id, :branch_id, x.claim_id, x.run_id, 'supports'
    FROM bench_counterfactual,
         LATERAL (VALUES (claim_a, run_a, evidence_a), (claim_b, run_b, evidence_b))
                 AS x(claim_id, run_id, evidence_id);
""" + HELD_CLAIMS.format(table="bench_counterfactual")

STRICT = {
    "id": "bench-three-groups-v1",
    "description": "three independent support groups",
    "body": {
        "min_support_groups": 3,
        "min_support_providers": 2,
        "dispute_confidence_bar": 0.6,
        "retraction_min_endorse_groups": 2,
    },
}


def populate(uow: UnitOfWork, engine: Engine, nodes: int) -> list[UUID]:
    thread = create_thread(uow, title="counterfactual benchmark", objective="Which rules fit?", actor=ACTOR)
    binds = {
        "thread_id": thread.id,
        "branch_id": thread.main_branch_id,
        "nodes": nodes,
        "ready_every": READY_EVERY,
        "actor": ACTOR,
    }
    with engine.begin() as conn:
        _execute(conn, PLAN, binds)
        return [
            UUID(str(v))
            for v in conn.execute(text("SELECT version_id FROM bench_counterfactual ORDER BY n")).scalars()
        ]


def run(nodes: int | None = None) -> dict[str, Any]:
    nodes = nodes or sized(NODES, 20)
    with bench_database() as (url, server):
        engine = engine_for(url)
        uow = uow_of(engine)
        started = time.monotonic()
        versions = populate(uow, engine, nodes)
        outcomes: dict[str, int] = {}
        for result in consolidate_many(uow, versions, actor=ACTOR):
            outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
        setup_s = time.monotonic() - started

        started, cpu = time.monotonic(), time.process_time()
        strict = counterfactual(uow, STRICT)
        strict_s, strict_cpu_s = time.monotonic() - started, time.process_time() - cpu
        started = time.monotonic()
        default = counterfactual(uow, "council-default-v1")
        default_s = time.monotonic() - started

    checks = {
        "default_zero_changes": not default.changed and default.reproduced == default.compared == nodes,
        "strict_changes_exactly_the_consolidations": len(strict.changed) == outcomes.get("committed", 0)
        and all(c.kind == "consolidation" for c in strict.changed),
    }
    per_s = strict.compared / strict_s
    return {
        "benchmark": "counterfactual",
        "server": server,
        "stored_decisions": strict.compared,
        "committer_outcomes": outcomes,
        "setup_s": round(setup_s, 1),
        "strict": {
            "seconds": round(strict_s, 2),
            "client_cpu_s": round(strict_cpu_s, 2),
            "changed": len(strict.changed),
            "per_s": round(per_s, 1),
        },
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "default": {
            "seconds": round(default_s, 2),
            "changed": len(default.changed),
            "per_s": round(default.compared / default_s, 1),
        },
        "evaluations_per_s": round(per_s, 1),
        "target_per_s": TARGET_PER_S,
        "checks": checks,
        "ok": per_s >= TARGET_PER_S and all(checks.values()),
    }
