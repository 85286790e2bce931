"""What a synchronous commit costs (issue 47): `benchmarks statements` and `benchmarks
worker-profile`, and a plain commit's latency, against one server and against a primary with a
standby, asynchronous then synchronous.

    python -m tests.replicated.sync_cost [--json] [--councils N] [--profile-councils N] [--commits N]

Each setup is the pgserver wheel's Postgres 16 started by tests/soak/replica.py, with fsync on
(the soak turns it off): ``single`` is the primary alone (its standby stopped, no synchronous
standby named), ``async`` the pair streaming without waiting, ``sync`` the pair with
``synchronous_standby_names = '*'`` and ``synchronous_commit = on``. The benchmarks run as
subprocesses with ``COUNCIL_BENCH_DATABASE_URL`` naming the setup (for the pairs, the
multi-host URL with ``target_session_attrs=read-write``), so they make their database there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

from tests.soak.cluster import REPO
from tests.soak.replica import ReplicatedCluster


def _fsync_on(c: ReplicatedCluster) -> None:
    for node in c.nodes.values():
        with open(node.pgdata / "postgresql.conf", "a") as f:
            f.write("\nfsync = on\n")
    for key in ("postgres", "standby"):
        proc = c.procs.get(key)
        if proc is not None and proc.running():
            with psycopg.connect(
                c.node_url(c.primary if key == "postgres" else c.standby), autocommit=True
            ) as conn:
                conn.execute("SELECT pg_reload_conf()")


def _commits(url: str, n: int) -> dict[str, float]:
    """``n`` one-row INSERT transactions one after another: each commit's latency, ms."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS sync_cost (id bigserial PRIMARY KEY, at timestamptz)")
        took = []
        for _ in range(n):
            t = time.perf_counter()
            conn.execute("INSERT INTO sync_cost (at) VALUES (clock_timestamp())")
            took.append((time.perf_counter() - t) * 1000)
    took.sort()
    return {
        "n": n,
        "median_ms": round(statistics.median(took), 3),
        "p95_ms": round(took[int(len(took) * 0.95)], 3),
        "max_ms": round(took[-1], 3),
    }


def _bench(name: str, admin: str, extra: dict[str, str]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env.update(COUNCIL_BENCH_DATABASE_URL=admin, **extra)
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", name, "--json"],
        env=env,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=3600,
        check=False,
    )
    try:
        doc: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-400:]}"}
    return doc


def measure(setup: str, args: argparse.Namespace) -> dict[str, Any]:
    # a directory of its own under /tmp: Postgres may run as another user (cluster.init_postgres)
    workdir = Path(tempfile.mkdtemp(prefix=f"council-sync-cost-{setup}-"))
    c = ReplicatedCluster(workdir, sync=setup == "sync")
    try:
        c.up_ledger()
        _fsync_on(c)
        if setup == "single":
            c.set_synchronous(False)
            standby = c.procs["standby"]
            standby.expected_down = True
            standby.popen.terminate()  # type: ignore[union-attr]
            standby.popen.wait(timeout=60)  # type: ignore[union-attr]
            admin = c.node_url(c.primary)
        else:
            admin = c.multi_url(c.ports, user="postgres", db="postgres")
        out: dict[str, Any] = {"setup": setup, "commit": _commits(admin, args.commits)}
        out["statements"] = _bench(
            "statements", admin, {"COUNCIL_BENCH_STATEMENTS_COUNCILS": str(args.councils)}
        )
        out["worker_profile"] = _bench(
            "worker-profile",
            admin,
            {
                "COUNCIL_BENCH_PROFILE_COUNCILS": str(args.profile_councils),
                "COUNCIL_BENCH_PROFILE_PYSPY": "0",
            },
        )
        return out
    finally:
        c.down()
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.replicated.sync_cost", description=__doc__)
    p.add_argument("--json", action="store_true")
    p.add_argument("--councils", type=int, default=5, help="benchmarks statements: councils")
    p.add_argument("--profile-councils", type=int, default=12, help="benchmarks worker-profile: councils")
    p.add_argument("--commits", type=int, default=500, help="one-row commits timed one after another")
    p.add_argument("--setups", default="single,async,sync")
    args = p.parse_args(argv)
    setups = [s for s in args.setups.split(",") if s]
    if not setups or set(setups) - {"single", "async", "sync"} or min(args.councils, args.commits) < 1:
        print("sync_cost: --setups is single, async and/or sync; sizes are positive", file=sys.stderr)
        return 2
    results = [measure(s, args) for s in setups]
    print(json.dumps({"benchmark": "sync-commit-cost", "results": results}, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
