"""The soak: N seeded fault schedules against Council as real processes, each checked
from the ledger (issue 31 part 3; `make soak`).

    python -m tests.soak --schedules 50 --seed 1 [--json] [--phase-s 20] [--workdir DIR]

One private cluster (cluster.py) serves every schedule; each schedule has a thread
of its own (schedule.py), faults (faults.py) and a check (checker.py). Exit 0 when
no schedule showed an anomaly, 1 when one did (the seeds are named: `--schedules 1
--seed S` replays one), 2 when the soak could not run. With --json the summary is
one JSON document on stdout; the per-schedule history and results stay in the
work directory.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from tests.soak.cluster import Cluster
from tests.soak.faults import FAULT_WEIGHTS, REPLICATED_FAULTS
from tests.soak.replica import ReplicatedCluster
from tests.soak.schedule import Schedule


def run_soak(
    schedules: int,
    seed: int,
    workdir: Path,
    *,
    phase_s: float = 20,
    quiesce_bound_s: float = 120,
    lease_s: float = 6,
    sweep_s: float = 2,
    time_budget_s: float = 0,
    log: Any = None,
    kinds: list[str] | None = None,
    dispatches: tuple[int, int] = (2, 4),
    replicated: bool = False,
    sync: bool = True,
) -> list[dict[str, Any]]:
    cluster = (
        ReplicatedCluster(workdir, lease_s=lease_s, sweep_s=sweep_s, sync=sync)
        if replicated
        else Cluster(workdir, lease_s=lease_s, sweep_s=sweep_s)
    )
    results: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        cluster.up()
        for i in range(schedules):
            if time_budget_s and time.monotonic() - started > time_budget_s:
                if log:
                    log(f"time budget spent after {i} schedule(s)")
                break
            s = seed + i
            out = workdir / "schedules" / f"seed-{s}"
            t = time.monotonic()
            try:
                res = Schedule(
                    cluster,
                    s,
                    out,
                    phase_s=phase_s,
                    quiesce_bound_s=quiesce_bound_s,
                    kinds=kinds,
                    dispatches=dispatches,
                ).run()
            except Exception as exc:
                traceback.print_exc(file=sys.stderr)
                res = {
                    "seed": s,
                    "faults": [],
                    "fault_kinds": [],
                    "stats": {},
                    "anomalies": [
                        {
                            "inv": "harness",
                            "kind": "harness_error",
                            "detail": f"{type(exc).__name__}: {exc}",
                            "ids": [],
                        }
                    ],
                }
                cluster.heal()
            res["wall_s"] = round(time.monotonic() - t, 1)
            results.append(res)
            if log:
                kinds_found = sorted({a["kind"] for a in res["anomalies"]})
                log(
                    f"seed {s}: {len(res['anomalies'])} anomaly(ies) {kinds_found} | faults "
                    f"{res['faults']} | "
                    f"runs {res['stats'].get('runs_by_status')} done "
                    f"{res['stats'].get('runs_done_after_heal_s')} s "
                    f"after heal, quiet {res.get('quiescence_s')} s | {res['wall_s']} s"
                )
    finally:
        cluster.down()
    return results


def _spread(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "min": None, "median": None, "max": None}
    return {
        "n": len(values),
        "min": min(values),
        "median": round(statistics.median(values), 1),
        "max": max(values),
    }


def _failovers(fs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each failover's resumption: the last write the old primary committed to the first the new one
    did (the ledger's event times), overall and by how the primary was lost."""
    by_how: dict[str, list[float]] = {}
    for f in fs:
        if f.get("resumption_s") is not None:
            by_how.setdefault(str(f["how"]), []).append(f["resumption_s"])
    return {
        "n": len(fs),
        "by_variant": _count_of([f"{f['how']}:{f['during']}" for f in fs]),
        "rejoined_by": _count_of([str(f.get("rejoined") or "the heal").split(" (")[0] for f in fs]),
        "resumption_s": _spread([v for vs in by_how.values() for v in vs]),
        "resumption_s_by_how": {k: _spread(v) for k, v in sorted(by_how.items())},
    }


def _count_of(items: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return dict(sorted(out.items()))


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    anomalies: dict[str, list[int]] = {}
    for r in results:
        for a in r["anomalies"]:
            anomalies.setdefault(a["kind"], []).append(r["seed"])
    faults: dict[str, int] = {}
    for r in results:
        for f in r.get("faults", []):
            faults[f] = faults.get(f, 0) + 1
    recovery: dict[str, dict[str, Any]] = {}
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        for f in r.get("recovery", []):
            key = f["kind"] + (" (left down until the heal)" if f["left_down"] else "")
            by_kind.setdefault(key, []).append(f)
    for key, fs in sorted(by_kind.items()):
        recovery[key] = {
            "faults": len(fs),
            "with_runs_in_flight": sum(1 for f in fs if f["runs_after"]),
            "recovery_s": _spread([f["recovery_s"] for f in fs if f["runs_after"]]),
        }
    quiet_by_kind: dict[str, list[float]] = {}
    for r in results:
        kinds = r.get("fault_kinds", [])
        key = kinds[0] if len(kinds) == 1 else "mixed"
        if r.get("quiescence_s") is not None:
            quiet_by_kind.setdefault(key, []).append(r["quiescence_s"])
    heal = [
        r["stats"]["runs_done_after_heal_s"]
        for r in results
        if "runs_done_after_heal_s" in r.get("stats", {})
    ]
    quiet = [r["quiescence_s"] for r in results if r.get("quiescence_s") is not None]

    def total(key: str) -> int:
        return sum(int(r.get("stats", {}).get(key) or 0) for r in results)

    statuses: dict[str, int] = {}
    for r in results:
        for k, v in (r.get("stats", {}).get("runs_by_status") or {}).items():
            statuses[k] = statuses.get(k, 0) + v
    return {
        "schedules": len(results),
        "seeds": [r["seed"] for r in results],
        "failed_seeds": sorted({r["seed"] for r in results if r["anomalies"]}),
        "anomalies": {k: sorted(set(v)) for k, v in sorted(anomalies.items())},
        "load": {
            "runs": total("runs"),
            "runs_by_status": statuses,
            "claims": total("claims"),
            "events": total("events"),
            "evaluations": total("evaluations"),
            "replayed": total("replayed"),
            "dispatch_ops": sum(
                v for r in results for k, v in (r.get("ops") or {}).items() if k.startswith("dispatch:")
            ),
        },
        "faults": dict(sorted(faults.items())),
        "faults_total": sum(faults.values()),
        "recovery_by_fault_kind": recovery,
        "quiescent_after_heal_by_schedule_kind": {k: _spread(v) for k, v in sorted(quiet_by_kind.items())},
        "runs_done_after_heal_s": _spread(heal),
        "quiescent_after_heal_s": _spread(quiet),
        "unexpected_exits": sum(len(r.get("unexpected_exits", [])) for r in results),
        "failovers": _failovers([f for r in results for f in r.get("failovers", [])]),
        "wall_s": round(sum(r.get("wall_s", 0) for r in results), 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tests.soak", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--schedules", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true", help="the summary as one JSON document on stdout")
    p.add_argument("--phase-s", type=float, default=15, help="the fault phase of a schedule")
    p.add_argument("--quiesce-bound-s", type=float, default=120, help="the bound on recovery after the heal")
    p.add_argument("--lease-s", type=float, default=6, help="COUNCIL_RUN_LEASE_S for the soak")
    p.add_argument("--sweep-s", type=float, default=2, help="COUNCIL_SWEEP_EVERY_S for the soak")
    p.add_argument("--time-budget-s", type=float, default=0, help="start no schedule after this long")
    p.add_argument(
        "--kinds",
        default="",
        help="the faults of every schedule, comma-separated, a kind once per fault (default: the seed's)",
    )
    p.add_argument("--workdir", type=Path, default=None, help="default: a new temporary directory")
    p.add_argument(
        "--replicated",
        action="store_true",
        help="a primary and a synchronous standby (tests/soak/replica.py); implied by --kinds failover",
    )
    p.add_argument(
        "--async-standby",
        action="store_true",
        help="with --replicated: the standby replicates asynchronously (acknowledged writes may be lost)",
    )
    args = p.parse_args(argv)
    if args.schedules < 1 or args.phase_s <= 0 or args.lease_s <= 0 or args.sweep_s <= 0:
        print("soak: --schedules, --phase-s, --lease-s and --sweep-s must be positive", file=sys.stderr)
        return 2
    kinds = [k for k in args.kinds.split(",") if k] or None
    known = [*FAULT_WEIGHTS, *REPLICATED_FAULTS]
    unknown = sorted(set(kinds or []) - set(known))
    if unknown:
        print(f"soak: unknown fault kind(s) {unknown}; known: {sorted(known)}", file=sys.stderr)
        return 2
    replicated = args.replicated or bool(set(kinds or []) & set(REPLICATED_FAULTS))
    if args.async_standby and not replicated:
        print("soak: --async-standby needs --replicated (or --kinds failover)", file=sys.stderr)
        return 2
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="council-soak-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)

    def log(msg: str) -> None:
        print(
            f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr if args.json else sys.stdout, flush=True
        )

    log(f"soak: {args.schedules} schedule(s) from seed {args.seed} in {workdir}")
    try:
        results = run_soak(
            args.schedules,
            args.seed,
            workdir,
            phase_s=args.phase_s,
            quiesce_bound_s=args.quiesce_bound_s,
            lease_s=args.lease_s,
            sweep_s=args.sweep_s,
            time_budget_s=args.time_budget_s,
            log=log,
            kinds=kinds,
            replicated=replicated,
            sync=not args.async_standby,
        )
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        print(
            json.dumps({"error": f"the soak could not run: {exc}", "code": 2})
            if args.json
            else f"soak: ERROR {exc}"
        )
        return 2
    summary = summarize(results)
    summary["workdir"] = str(workdir)
    (workdir / "summary.json").write_text(
        json.dumps({"summary": summary, "results": results}, indent=2, default=str)
    )
    if args.json:
        print(json.dumps(summary, default=str))
    else:
        print(json.dumps(summary, indent=2, default=str))
        verdict = "FAIL" if summary["failed_seeds"] else "PASS"
        print(
            f"soak: {verdict} {summary['schedules']} schedule(s), {summary['faults_total']} fault(s), "
            f"{summary['load']['runs']} run(s); anomalies {summary['anomalies'] or 'none'}"
        )
    return 1 if summary["failed_seeds"] else 0


if __name__ == "__main__":
    sys.exit(main())
