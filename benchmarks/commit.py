"""Commit throughput: consolidations per second, relative to what the server can do.

Eight committer processes, each with its own engine and connection, prepare
500 ready nodes of their own (untimed), are released together, and consolidate
them; the figure is consolidations / s from the release until the last one is
done. The same run measures pgbench with eight clients doing the committer's
skeleton — transaction-scoped advisory lock, a small read, an insert, commit —
on the same database, and reports the ratio. Target: ratio ≥ 0.5 (issue 19; it was 0.30).

The committers consolidate as the commit workers do, a batch of
``council.services.consolidation.EVALUATION_BATCH`` versions per transaction (the headline
figure); the same race one version at a time is reported beside it.

It also reports where the CPU went while the committers ran — their own CPU
time, and that of their server processes (read with psutil: the server is local
here) — and the ceiling that follows: with both on the same cores, no more
than ``cores / (client + server CPU per consolidation)`` per second.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

from sqlalchemy import Engine, text

from benchmarks.harness import bench_database, process_cpu_s, race, sized
from council.ledger.unit import UnitOfWork
from council.services.consolidation import EVALUATION_BATCH, consolidate, consolidate_many
from tests.builders import Ledger
from tests.engines import engine_for

COMMITTERS = 8
NODES_PER_COMMITTER = 500
PGBENCH_SECONDS = 5
TARGET_RATIO = 0.5  # issue 19 (was 0.30)

# The committer's skeleton: lock a key, read a few rows, insert one, commit.
PGBENCH_SCRIPT = """\
\\set k random(1, 100000)
BEGIN;
SELECT pg_advisory_xact_lock(:k);
SELECT id, k, payload FROM bench_scratch WHERE k BETWEEN :k AND :k + 4;
INSERT INTO bench_scratch (k, payload) VALUES (:k, md5(CAST(:k AS text)));
COMMIT;
"""
SCRATCH_TABLE = """
CREATE TABLE bench_scratch (id bigserial PRIMARY KEY, k integer NOT NULL, payload text NOT NULL);
INSERT INTO bench_scratch (k, payload) SELECT g, md5(CAST(g AS text)) FROM generate_series(1, 100000) g;
CREATE INDEX bench_scratch_k ON bench_scratch (k);
ANALYZE bench_scratch;
"""


def committer(url: str, nodes: int, actor: str, batch: int = 1) -> Callable[[], dict[str, Any]]:
    """Prepare one committer process: its own engine, its own thread of ready nodes,
    and one consolidation already done (untimed), as a long-running worker would have."""
    engine = engine_for(url, pool_size=1)
    ledger = Ledger.new(engine, title=f"commit benchmark: {actor}")
    warm_up, *versions = [ledger.ready_node(f"{actor}: claim {i}") for i in range(nodes + 1)]
    consolidate(ledger.uow, warm_up, actor=actor)  # untimed: the process's first commit pays for its caches
    with engine.connect() as conn:  # the one pooled connection every consolidation will use
        backend = int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())
    return lambda: _consolidate_all(ledger.uow, versions, actor, backend, batch)


def _consolidate_all(
    uow: UnitOfWork, versions: list[UUID], actor: str, backend: int, batch: int
) -> dict[str, Any]:
    started, cpu, server_cpu = time.perf_counter(), time.process_time(), process_cpu_s(backend)
    outcomes: Counter[str] = Counter()
    for start in range(0, len(versions), batch):
        chunk = versions[start : start + batch]
        outcomes.update(r.outcome for r in consolidate_many(uow, chunk, actor=actor))
    server_after = process_cpu_s(backend)
    return {
        "outcomes": dict(outcomes),
        "seconds": time.perf_counter() - started,
        "cpu_s": time.process_time() - cpu,
        "backend_cpu_s": (
            server_after - server_cpu if server_cpu is not None and server_after is not None else None
        ),
    }


def pgbench_binary() -> str:
    """The pgbench shipped with pgserver (matches the embedded server), else the one on PATH."""
    try:
        from pgserver._commands import POSTGRES_BIN_PATH

        bundled = Path(POSTGRES_BIN_PATH) / "pgbench"
        if bundled.exists():
            return str(bundled)
    except ImportError:
        pass
    found = shutil.which("pgbench")
    if found is None:
        raise RuntimeError("pgbench not found: neither pgserver's bundled binary nor one on PATH")
    return found


def pgbench(engine: Engine, url: str, clients: int, seconds: int) -> dict[str, Any]:
    """Transactions per second of :data:`PGBENCH_SCRIPT` on the database at ``url``."""
    with engine.begin() as conn:
        for statement in filter(str.strip, SCRATCH_TABLE.split(";")):
            conn.execute(text(statement))
    return run_pgbench(url, PGBENCH_SCRIPT, clients, seconds)


def run_pgbench(url: str, script_text: str, clients: int, seconds: int) -> dict[str, Any]:
    """Transactions per second of the pgbench script ``script_text`` on the database at ``url``."""
    binary = pgbench_binary()
    with tempfile.TemporaryDirectory(prefix="council-pgbench-") as tmp:
        script = Path(tmp) / "script.sql"
        script.write_text(script_text)
        args = [binary, "-n", "-c", str(clients), "-j", str(min(clients, os.cpu_count() or 1))]
        args += ["-T", str(seconds), "-f", str(script), url]
        completed = subprocess.run(args, capture_output=True, text=True, timeout=seconds + 60)
    found = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", completed.stdout)
    if completed.returncode != 0 or found is None:
        raise RuntimeError(
            f"pgbench failed ({completed.returncode}):\n{completed.stdout}\n{completed.stderr}"
        )
    failed = re.search(r"number of failed transactions: (\d+)", completed.stdout)
    return {
        "tps": float(found.group(1)),
        "failed": int(failed.group(1)) if failed else 0,
        "binary": binary,
        "clients": clients,
        "seconds": seconds,
    }


def run(
    committers: int | None = None,
    nodes_per_committer: int | None = None,
    pgbench_seconds: int | None = None,
    target_ratio: float = TARGET_RATIO,
) -> dict[str, Any]:
    committers = committers or sized(COMMITTERS, 2)
    nodes_per_committer = nodes_per_committer or sized(NODES_PER_COMMITTER, 3)
    pgbench_seconds = pgbench_seconds or sized(PGBENCH_SECONDS, 1)
    with bench_database() as (url, server):
        engine = engine_for(url)
        modes = {}
        # EVALUATION_BATCH: what a commit-queue message carries
        for mode, batch in (("one_at_a_time", 1), ("batched", EVALUATION_BATCH)):
            modes[mode] = _race(engine, url, committers, nodes_per_committer, batch)
        baseline = pgbench(engine, url, committers, pgbench_seconds)
    for figures in modes.values():
        figures["ratio"] = round(figures["consolidations_per_s"] / baseline["tps"], 3)
        if figures["cpu_ceiling_per_s"] is not None:
            figures["cpu_ceiling_ratio"] = round(figures["cpu_ceiling_per_s"] / baseline["tps"], 3)
    headline = modes["batched"]
    correct = all(figures["correct"] for figures in modes.values())
    return {
        "benchmark": "commit",
        "ok": correct and baseline["failed"] == 0 and headline["ratio"] >= target_ratio,
        "target": f"consolidations/s ≥ {target_ratio:g} × pgbench lock+read+insert tps, {committers} clients",
        "target_ratio": target_ratio,
        # The committers consolidate as the commit workers do: EVALUATION_BATCH versions per
        # transaction. One at a time (`council consolidate`, a lone evaluation) is reported too.
        "ratio": headline["ratio"],
        "consolidations_per_s": headline["consolidations_per_s"],
        "batch": EVALUATION_BATCH,
        "pgbench_tps": round(baseline["tps"], 1),
        "committers": committers,
        "nodes_per_committer": nodes_per_committer,
        "correct": correct,
        "cores": os.cpu_count() or 1,
        **modes,
        "pgbench": baseline,
        "server": server,
    }


def _race(engine: Engine, url: str, committers: int, nodes: int, batch: int) -> dict[str, Any]:
    """Committer processes on fresh ready nodes of their own, released together."""
    live_before = _live(engine)
    raced = race(
        committer,
        [(url, nodes, f"committer {i} (batch {batch})", batch) for i in range(committers)],
        timeout=900,
    )
    live = _live(engine)
    expected = committers * nodes
    outcomes: Counter[str] = Counter()
    for result in raced.results:
        outcomes.update((result or {}).get("outcomes", {}))
    # every committer's warm-up consolidation is live too
    correct = (
        not raced.errors
        and outcomes == Counter({"committed": expected})
        and live - live_before == expected + committers
    )
    done = max(outcomes["committed"], 1)
    client_ms = 1000 * sum((r or {}).get("cpu_s", 0.0) for r in raced.results) / done
    backends = [(r or {}).get("backend_cpu_s") for r in raced.results]
    server_ms = 1000 * sum(b for b in backends if b is not None) / done if None not in backends else None
    ceiling = (os.cpu_count() or 1) * 1000 / (client_ms + server_ms) if server_ms else None
    return {
        "batch": batch,
        "consolidations_per_s": round(outcomes["committed"] / raced.elapsed_s, 1),
        "consolidations": outcomes["committed"],
        "elapsed_s": round(raced.elapsed_s, 3),
        "outcomes": dict(outcomes),
        "correct": correct,
        "errors": raced.errors[:3],
        "prepare_s": round(raced.ready_s, 1),
        "cpu_ms_per_consolidation": {
            "committers": round(client_ms, 2),
            "their_postgres_backends": round(server_ms, 2) if server_ms is not None else None,
        },
        # What the cores could do at that CPU cost (and, filled in later, the ratio it gives).
        "cpu_ceiling_per_s": round(ceiling, 1) if ceiling else None,
        "cpu_ceiling_ratio": None,
    }


def _live(engine: Engine) -> int:
    with engine.connect() as conn:
        live = conn.execute(text("SELECT count(*) FROM consolidations WHERE status = 'live'"))
        return int(live.scalar_one())
