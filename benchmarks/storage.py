"""Evaluation storage: bytes of recorded not-ready evaluations per byte of claims
on hot nodes (revision 0014's compact evaluation chains), before and after, in one run.

The pipeline is dense and never consolidates, the worst case for storage: one
thread with 10 open propositions; 100 dispatches of 10 simulated agents of one
provider family (so no node ever has two independent support groups) run
through the service path a worker takes (``execute_run``, in this process),
and after each run every version it claimed on is evaluated
(``consolidate_many``), so each node is evaluated about once per run. With
``COUNCIL_BENCH_STORAGE_RUNS`` the number of runs can be lowered for a quick look (a
smoke run, ``COUNCIL_BENCH_SMOKE``, makes 20).

``after``: ``pg_total_relation_size`` (heap, TOAST and every index) of
``consolidation_evaluations`` plus ``decision_reasons``, against that of
``claims``; ``before``: the same evaluations in the layout before 0013 (every
row its whole manifest, section hashes and reasons inline, with its indexes),
written to a scratch table from the manifests rebuilt from the chains (section
hashes padded to 64 digits) for every k-th evaluation in chain order (at most
``BEFORE_ROWS``; ``before.sampled_every`` is k) and scaled by k — measured in
the same database, after the same runs. Also the sum of ``pg_column_size`` of
the rows (data only). A replay check rebuilds a random sample of the
evaluations and recomputes their decisions.
Target: ``evaluation_to_claim_bytes`` ≤ 1.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

from benchmarks.dispatch import _environ
from benchmarks.harness import bench_database, sized
from council.adapters.scheduler import Recorder
from council.domain import manifests as chain
from council.ledger.evaluation_chains import stored
from tests.builders import Ledger
from tests.engines import engine_for, pq, uow_of

AGENTS = [f"sim{i}" for i in range(1, 11)]
NODES = 10
RUNS = 1000
TARGET = 1.0
SAMPLE = 50
# `before` writes at most this many evaluations' whole manifests (every k-th of each chain), scaled up.
BEFORE_ROWS = 1000
RUNS_ENV = "COUNCIL_BENCH_STORAGE_RUNS"
CHUNK = 100

# The layout before revision 0013, for `before`: each row whole, with the indexes it had.
OLD_LAYOUT = """
CREATE TABLE bench_old_evaluations (
    id uuid PRIMARY KEY, thread_id uuid NOT NULL, logical_node_id uuid NOT NULL,
    node_version_id uuid NOT NULL, rule_set_id text NOT NULL, grouping_algorithm_id text NOT NULL,
    snapshot_sha256 text NOT NULL, outcome text NOT NULL, reasons jsonb NOT NULL, snapshot jsonb,
    created_at timestamptz NOT NULL, manifest jsonb, section_sha256 jsonb, claims_seen integer,
    UNIQUE (node_version_id, snapshot_sha256));
CREATE INDEX ON bench_old_evaluations (logical_node_id, created_at);
CREATE INDEX ON bench_old_evaluations (node_version_id, claims_seen);
"""
COPY_OLD = """
INSERT INTO bench_old_evaluations
SELECT e.id, e.thread_id, e.logical_node_id, e.node_version_id, e.rule_set_id, e.grouping_algorithm_id,
       e.snapshot_sha256, e.outcome, e.reasons, NULL, e.created_at, CAST(x.manifest AS jsonb),
       CAST(x.sections AS jsonb), e.claims_seen
FROM council_v_evaluations e
JOIN jsonb_to_recordset(CAST(:rows AS jsonb)) AS x(id uuid, manifest jsonb, sections jsonb) ON x.id = e.id
"""
SIZES = """
SELECT (SELECT pg_total_relation_size('claims')) AS claims,
       (SELECT pg_total_relation_size('consolidation_evaluations')) AS evaluations,
       (SELECT pg_total_relation_size('decision_reasons')) AS reasons,
       (SELECT pg_total_relation_size('bench_old_evaluations')) AS old,
       (SELECT coalesce(sum(pg_column_size(c.*)), 0) FROM claims c) AS claims_data,
       (SELECT coalesce(sum(pg_column_size(e.*)), 0) FROM consolidation_evaluations e) AS evaluations_data,
       (SELECT coalesce(sum(pg_column_size(r.*)), 0) FROM decision_reasons r) AS reasons_data,
       (SELECT coalesce(sum(pg_column_size(o.*)), 0) FROM bench_old_evaluations o) AS old_data,
       (SELECT coalesce(avg(pg_column_size(e.*)), 0) FROM consolidation_evaluations e
        WHERE e.link IS NOT NULL AND e.rule_set_id IS NULL) AS link_row_data,
       (SELECT coalesce(avg(pg_column_size(e.link)), 0) FROM consolidation_evaluations e
        WHERE e.link IS NOT NULL AND e.rule_set_id IS NULL) AS link_delta_data,
       (SELECT coalesce(sum(pg_column_size(e.*)), 0) FROM consolidation_evaluations e
        WHERE e.link IS NOT NULL AND e.rule_set_id IS NOT NULL) AS roots_data,
       (SELECT pg_indexes_size('consolidation_evaluations')) AS evaluation_indexes,
       (SELECT pg_indexes_size('claims')) AS claim_indexes,
       (SELECT count(*) FROM claims) AS claim_rows,
       (SELECT count(*) FROM consolidation_evaluations) AS evaluation_rows,
       (SELECT count(*) FROM consolidation_evaluations WHERE link IS NOT NULL AND rule_set_id IS NOT NULL)
           AS roots,
       (SELECT count(*) FROM decision_reasons) AS reason_rows,
       (SELECT count(*) FROM consolidations) AS consolidations,
       (SELECT count(*) FROM logical_nodes) AS nodes
"""


def _profiles(home: Path) -> Path:
    path = home / "profiles.toml"
    path.write_text(
        "".join(
            f'[profiles.{name}]\nmodel = "council-sim/{name}"\nprovider = "anthropic"\n\n' for name in AGENTS
        ),
        encoding="utf-8",
    )
    return path


def _pipeline(engine: Engine, runs: int) -> tuple[int, float]:
    """Dispatch and execute ``runs`` runs on one thread of NODES propositions, evaluating
    after each run what it claimed on; (runs that succeeded, seconds)."""
    from council.services.consolidation import consolidate_many
    from council.services.dispatch import dispatch
    from council.services.execution import execute_run

    ledger = Ledger.new(engine, title="storage benchmark", evidence_items=5)
    for i in range(NODES):
        ledger.node(f"Proposition {i}: the adapter returns the same rows", cites=[ledger.evidence[i % 5]])
    uow, succeeded, started = uow_of(engine), 0, time.perf_counter()
    for _ in range(-(-runs // len(AGENTS))):
        scheduler = Recorder()
        dispatch(uow, scheduler, ledger.thread_id, AGENTS, mode="independent", rounds=1, actor="bench")
        for run_id in scheduler.runs:
            succeeded += execute_run(uow, scheduler, run_id).status == "succeeded"
            if scheduler.evaluations:
                consolidate_many(uow, scheduler.evaluations, actor="bench")
                scheduler.evaluations.clear()
    return succeeded, time.perf_counter() - started


def _replay_sample(engine: Engine, ids: list[Any]) -> dict[str, Any]:
    from council.services.consolidation import replay

    sample = random.Random(19).sample(ids, min(SAMPLE, len(ids)))
    results = [replay(uow_of(engine), i) for i in sample]
    return {"replayed": len(results), "matched": sum(r.match for r in results)}


def run(runs: int | None = None) -> dict[str, Any]:
    runs = runs or int(os.environ.get(RUNS_ENV, sized(RUNS, 20)))
    load = os.getloadavg()
    with ExitStack() as stack:
        url, server = stack.enter_context(bench_database())
        home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="council-bench-storage-")))
        stack.enter_context(
            _environ(
                {
                    "COUNCIL_HOME": str(home),
                    "COUNCIL_PROFILES": str(_profiles(home)),
                    "COUNCIL_SIMULATE": "1",
                    "COUNCIL_OFFLINE": "1",
                }
            )
        )
        engine = engine_for(url)
        succeeded, pipeline_s = _pipeline(engine, runs)
        with engine.begin() as conn:
            ids = list(
                conn.execute(
                    text("SELECT id FROM consolidation_evaluations ORDER BY node_version_id, seq")
                ).scalars()
            )
            conn.execute(text(OLD_LAYOUT))
        # The old layout's rows are large (a hot node's manifest names ~1,000 claims): written
        # for every k-th evaluation in chain order, its size scaled by k (a systematic sample).
        every = max(1, -(-len(ids) // BEFORE_ROWS))
        sampled = ids[::every]
        for start in range(0, len(sampled), CHUNK):
            with engine.begin() as conn:
                rebuilt = stored(pq(conn), sampled[start : start + CHUNK])
                # A link keeps the first digits of a changed section's hash; the old layout kept all 64.
                rows = [
                    {
                        "id": str(i),
                        "manifest": s.manifest,
                        "sections": {k: v.ljust(64, "0") for k, v in s.sections.items()},
                    }
                    for i, s in rebuilt.items()
                ]
                conn.execute(text(COPY_OLD), {"rows": json.dumps(rows)})
        with engine.begin() as conn:
            conn.execute(text("ANALYZE"))
            sizes = dict(conn.execute(text(SIZES)).mappings().one())
        check = _replay_sample(engine, ids)
    scale = len(ids) / max(1, len(sampled))
    sizes["old"], sizes["old_data"] = round(sizes["old"] * scale), round(sizes["old_data"] * scale)
    after = sizes["evaluations"] + sizes["reasons"]
    ratio = after / sizes["claims"]
    return {
        "benchmark": "storage",
        "runs": runs,
        "runs_succeeded": succeeded,
        "nodes": sizes["nodes"],
        "pipeline_s": round(pipeline_s, 1),
        "rows": {
            "claims": sizes["claim_rows"],
            "evaluations": sizes["evaluation_rows"],
            "evaluation_roots": sizes["roots"],
            "decision_reasons": sizes["reason_rows"],
            "consolidations": sizes["consolidations"],
        },
        "root_every": chain.ROOT_EVERY,
        "claim_bytes": sizes["claims"],
        "before": {
            "sampled_every": every,
            "evaluation_bytes": sizes["old"],
            "evaluation_to_claim_bytes": round(sizes["old"] / sizes["claims"], 3),
            "data_ratio": round(sizes["old_data"] / sizes["claims_data"], 3),
        },
        "after": {
            "evaluation_bytes": after,
            "evaluation_to_claim_bytes": round(ratio, 3),
            "data_ratio": round(
                (sizes["evaluations_data"] + sizes["reasons_data"]) / sizes["claims_data"], 3
            ),
        },
        "evaluation_to_claim_bytes": round(ratio, 3),
        "bytes_per_evaluation": round(after / max(1, sizes["evaluation_rows"]), 1),
        "bytes_per_claim": round(sizes["claims"] / max(1, sizes["claim_rows"]), 1),
        "breakdown": {
            "link_row_data_avg": round(float(sizes["link_row_data"]), 1),
            "link_delta_data_avg": round(float(sizes["link_delta_data"]), 1),
            "roots_data": sizes["roots_data"],
            "evaluation_index_bytes": sizes["evaluation_indexes"],
            "claim_index_bytes": sizes["claim_indexes"],
        },
        "replay_sample": check,
        "target": {"evaluation_to_claim_bytes": TARGET},
        "ok": ratio <= TARGET and check["matched"] == check["replayed"],
        "load": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "server": server,
    }
