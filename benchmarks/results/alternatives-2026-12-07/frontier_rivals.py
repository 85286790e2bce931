# ruff: noqa
"""Reentry packet latency on a thread of 20,000 nodes (open heads), 6,000 edges of which
2,000 contradicts (random pairs): median of reentry_packet(budget 4000) + markdown, after a warm-up. Run from a checkout's root:
PYTHONPATH=. python benchmarks/results/alternatives-2026-12-07/frontier_rivals.py (each head's
rivals are read by council_alternative_set_v1; `python -m benchmarks frontier` fails on main
itself, its claims written without their claim.added events since revision 0030)."""

import statistics, sys, time
from sqlalchemy import text
from benchmarks.harness import bench_database
from tests.engines import engine_for, uow_of
from council.ledger.unit import UnitOfWork
from council.services.threads import create_thread
from council.services.reentry import reentry_packet
from council.domain.reentry_markdown import render_markdown

NODES = 20000
with bench_database() as (url, server):
    engine = engine_for(url)
    uow = uow_of(engine)
    thread = create_thread(uow, title="bench", objective="frontier", actor="bench").id
    with engine.begin() as conn:
        conn.execute(text("SELECT setseed(0.3)"))
        branch = conn.execute(
            text("SELECT id FROM branches WHERE thread_id = :t"), {"t": thread}
        ).scalar_one()
        sql = """
            CREATE TEMP TABLE bn AS SELECT g AS idx, gen_random_uuid() AS node, gen_random_uuid() AS version FROM generate_series(1, :n) g;
            INSERT INTO logical_nodes (id, thread_id, branch_id) SELECT node, :t, :b FROM bn;
            INSERT INTO node_versions (id, logical_node_id, thread_id, branch_id, version_no, content, content_sha256, initial_status)
              SELECT version, node, :t, :b, 1, 'proposition ' || idx, encode(sha256(('p' || idx)::bytea), 'hex'), 'open' FROM bn ORDER BY idx;
            INSERT INTO edges (thread_id, branch_id, kind, from_version_id, to_version_id)
              SELECT DISTINCT ON (f.version, t.version, k) :t, :b, k, f.version, t.version
              FROM (SELECT g, (ARRAY['depends_on','supports','contradicts'])[1 + g % 3] AS k,
                           1 + floor(random() * :n)::int AS a, 1 + floor(random() * :n)::int AS c FROM generate_series(1, 6000) g) e
              JOIN bn f ON f.idx = e.a JOIN bn t ON t.idx = e.c WHERE e.a <> e.c
        """.replace(":n", str(NODES))
        for statement in sql.split(";"):
            conn.execute(text(statement), {"t": thread, "b": branch} if ":t" in statement else {})
    with engine.begin() as conn:
        conn.execute(text("ANALYZE"))
    reentry_packet(uow, str(thread), budget=4000)
    times = []
    for _ in range(25):
        t = time.perf_counter()
        render_markdown(reentry_packet(uow, str(thread), budget=4000))
        times.append(time.perf_counter() - t)
    print({"median_ms": round(statistics.median(times) * 1000, 1), "min_ms": round(min(times) * 1000, 1)})
