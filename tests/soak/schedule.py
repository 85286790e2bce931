"""One seeded schedule: a thread built with the CLI, dispatches and faults at seeded
moments, the heal, quiescence, and the checker over what the ledger recorded.

A seed decides everything the schedule does (the moments, the faults and their
targets, the load); what the system does in between is the system's. Most
schedules hold one fault kind (1–3 of it), so the recovery time of that kind can
be read off; the rest mix kinds at random (``FAULT_WEIGHTS``).
"""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from tests.soak.checker import check, work_left
from tests.soak.checker_services import probe_adjudications
from tests.soak.cluster import BIN, PROCESSES, REPO, Cluster
from tests.soak.faults import FAULT_WEIGHTS, fault_label, run_fault
from tests.soak.faults_failover import after_heal, failovers_of
from tests.soak.feed import Clients
from tests.soak.replica import ReplicatedCluster

AGENTS = "claude,codex,glm"


class Schedule:
    def __init__(
        self,
        cluster: Cluster,
        seed: int,
        outdir: Path,
        *,
        phase_s: float = 20,
        quiesce_bound_s: float = 120,
        kinds: list[str] | None = None,
        dispatches: tuple[int, int] = (2, 4),
    ) -> None:
        self.c = cluster
        self.seed = seed
        self.rng = random.Random(seed)
        self.out = outdir
        self.phase_s = phase_s
        self.quiesce_bound_s = quiesce_bound_s
        self.kinds = kinds
        self.n_dispatches = dispatches
        self.t0 = time.monotonic()
        self.ops: list[dict[str, Any]] = []
        self.faults: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.target_locks: dict[str, threading.Lock] = {}
        self.thread_id = ""
        self.evidence: list[str] = []
        self.versions: list[str] = []
        self.invalidated: set[str] = set()
        self.threads: list[threading.Thread] = []
        self.errors: list[str] = []
        self.crashes: list[dict[str, Any]] = []
        self.imports: list[str] = []  # recorded-debate files imported during a failover
        self.clients: Clients | None = None  # a replicated cluster's live reader and writer (feed.py)
        outdir.mkdir(parents=True, exist_ok=True)
        (outdir / "history.jsonl").unlink(missing_ok=True)

    # ------------------------------------------------------------------ recording
    def now(self) -> float:
        return time.monotonic() - self.t0

    def _write(self, entry: dict[str, Any]) -> None:
        with open(self.out / "history.jsonl", "a") as f:
            f.write(json.dumps(entry, default=str) + "\n")

    def record_op(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.ops.append(entry)
            self._write(entry)

    def record_fault(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.faults.append(entry)
            self._write(entry)

    def target(self, name: str) -> threading.Lock:
        with self.lock:
            return self.target_locks.setdefault(name, threading.Lock())

    def cli(self, op: str, *args: str, timeout_s: float = 90) -> dict[str, Any]:
        """One `council ... --json` call; its outcome: ok (exit 0), fail, or timeout (unknown)."""
        start = self.now()
        entry: dict[str, Any] = {
            "type": "op",
            "op": op,
            "t": round(start, 2),
            "args": list(args),
            "doc": None,
        }
        try:
            done = subprocess.run(
                [str(BIN / "council"), *args, "--json"],
                env=self.c.env(),
                capture_output=True,
                text=True,
                timeout=timeout_s,
                cwd=REPO,
            )
            entry["rc"] = done.returncode
            try:
                entry["doc"] = json.loads(done.stdout) if done.stdout.strip() else None
            except ValueError:
                entry["stdout"] = done.stdout[-500:]
            if done.returncode != 0:
                entry["stderr"] = done.stderr.strip()[-600:]
            entry["result"] = "ok" if done.returncode == 0 else "fail"
        except subprocess.TimeoutExpired:
            entry["result"] = "timeout"
        entry["dur"] = round(self.now() - start, 2)
        entry["ids"] = _acked_ids(op, entry)
        self.record_op(entry)
        return entry

    def spawn(self, fn: Callable[..., Any], *args: Any) -> None:
        def guarded() -> None:
            try:
                fn(*args)
            except Exception:  # a harness error, reported as such
                self.errors.append(traceback.format_exc(limit=3))

        th = threading.Thread(target=guarded, daemon=True)
        th.start()
        self.threads.append(th)

    # ------------------------------------------------------------------ load
    def setup(self) -> None:
        r = self.rng
        tag = f"soak seed {self.seed}"
        doc = self.cli(
            "thread", "thread", "create", "--title", tag, "--objective", f"Holds under faults? ({tag})"
        )
        if doc.get("result") != "ok":
            raise RuntimeError(f"thread create failed: {doc.get('stderr')}")
        self.thread_id = doc["doc"]["id"]
        evidence = [
            [
                "evidence",
                "add",
                "--thread",
                self.thread_id,
                "--title",
                f"E{i}",
                "--text",
                f"{tag}: observation {i}",
            ]
            for i in range(r.randint(2, 4))
        ]
        self.evidence = [d["id"] for d in self._parallel("evidence", evidence)]
        n_nodes = r.randint(2, 4)
        half = (n_nodes + 1) // 2  # the first half at once; the second may depend on it
        for batch in (range(half), range(half, n_nodes)):
            planned = []
            for i in batch:
                args = ["node", "add", "--thread", self.thread_id, "--content", f"Proposition {i} ({tag})"]
                for e in r.sample(self.evidence, k=min(len(self.evidence), r.randint(1, 2))):
                    args += ["--cites", e]
                if self.versions and r.random() < 0.6:
                    args += ["--depends-on", r.choice(self.versions)]
                planned.append(args)
            self.versions += [d["version_id"] for d in self._parallel("node", planned)]

    def _parallel(self, op: str, calls: list[list[str]]) -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = []
        ths = [threading.Thread(target=lambda a=a: got.append(self.cli(op, *a))) for a in calls]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        return [g["doc"] for g in got if g.get("result") == "ok"]

    def dispatch(self) -> None:
        mode = self.rng.choice(["independent", "deliberative", "deliberative"])
        rounds = 1 if mode == "independent" else self.rng.randint(2, 3)
        self.cli(
            "dispatch",
            "dispatch",
            "--thread",
            self.thread_id,
            "--agents",
            AGENTS,
            "--mode",
            mode,
            "--rounds",
            str(rounds),
        )

    def wait_busy(self, up_to_s: float) -> dict[str, int]:
        """Runs workers holding running runs (per the ledger's lease owner), waiting up to
        ``up_to_s`` for one, so that a kill, pause or partition lands mid-run more often."""
        deadline = time.monotonic() + up_to_s
        while True:
            try:
                with psycopg.connect(self.c.owner_url, connect_timeout=2) as conn:
                    rows = conn.execute(
                        "SELECT split_part(lease_owner, '@', 1), count(*) FROM agent_runs "
                        "WHERE status = 'running' AND thread_id = %s GROUP BY 1",
                        (self.thread_id,),
                    ).fetchall()
                busy = {str(n): int(k) for n, k in rows if n in ("runs1", "runs2")}
            except psycopg.Error:  # the database may be down: no target then
                busy = {}
            if busy or time.monotonic() > deadline:
                return busy
            time.sleep(0.3)

    # ------------------------------------------------------------------ the plan
    def plan(self, t_setup: float) -> list[tuple[float, str, str]]:
        r = self.rng
        if self.kinds is not None:
            faults = list(self.kinds)
        elif r.random() < 0.7:  # one kind, so its recovery time can be read off
            kind = sorted(FAULT_WEIGHTS)[self.seed % len(FAULT_WEIGHTS)]
            faults = [kind] * r.randint(1, 3)
        else:
            kinds = list(FAULT_WEIGHTS)
            faults = r.choices(kinds, weights=[FAULT_WEIGHTS[k] for k in kinds], k=r.randint(2, 4))
        plan = [
            (t_setup + (0 if i == 0 else r.uniform(0, self.phase_s * 0.6)), "dispatch", "")
            for i in range(r.randint(*self.n_dispatches))
        ]
        plan += [(t_setup + r.uniform(1, self.phase_s * 0.7), "fault", k) for k in faults]
        return sorted(plan)

    def supervise(self, stop: threading.Event) -> None:
        """As `council up`'s supervisor: a process that exits on its own is recorded (a crash)
        and started again after 1 s."""
        while not stop.wait(1.0):
            for crash in self.c.unexpected_exits():
                crash["t"] = round(self.now(), 2)
                self.crashes.append(crash)
                self._write({"type": "crash", **crash})
                if crash["name"] not in PROCESSES:
                    continue  # postgres and redis: the heal brings them back
                time.sleep(1.0)
                with self.target(crash["name"]):
                    if not self.c.procs[crash["name"]].running():
                        self.c.start_worker(crash["name"])

    def run(self) -> dict[str, Any]:
        self.setup()
        if isinstance(self.c, ReplicatedCluster):
            self.clients = Clients(self.c.app_url, self.thread_id, self.seed)
            self.clients.start()
        t_setup = self.now()
        plan = self.plan(t_setup)
        self._write({"type": "plan", "plan": [(round(t, 2), w, k) for t, w, k in plan]})
        stop = threading.Event()
        monitor = threading.Thread(target=self.supervise, args=(stop,), daemon=True)
        monitor.start()
        for at, what, kind in plan:
            if at > self.now():
                time.sleep(at - self.now())
            if what == "dispatch":
                self.spawn(self.dispatch)
            else:
                self.spawn(run_fault, self, kind, at)
        if t_setup + self.phase_s > self.now():
            time.sleep(t_setup + self.phase_s - self.now())
        for th in self.threads:
            th.join(timeout=120)
        stop.set()
        monitor.join(timeout=10)
        self.crashes += self.c.unexpected_exits()
        healed = self.c.heal()
        t_heal = self.now()
        for f in self.faults:
            f.setdefault("end_wall", time.time())
        heal_db = _db_now(self.c.owner_url)
        self._write({"type": "heal", "t": round(t_heal, 2), "did": healed})
        left, quiet_s = self.quiesce(t_heal)
        orphans = self.c.reap_orphans()
        self.recovery()
        acked = [o for o in self.ops if o.get("result") == "ok" or o.get("type") == "ack"]
        anomalies, stats = check(
            self.c.owner_url,
            self.c.app_url,
            [self.thread_id],
            acked,
            heal_at=heal_db,
            run_bound_s=self.quiesce_bound_s,
            env=self.c.env(),
        )
        anomalies += probe_adjudications(self.c.app_url, self.c.owner_url, [self.thread_id])
        if isinstance(self.c, ReplicatedCluster):
            more, feed_stats = after_heal(self)
            anomalies += more
            stats.update(feed_stats)
        if left:
            anomalies.insert(
                0,
                {
                    "inv": "a",
                    "kind": "not_quiescent",
                    "ids": [],
                    "detail": f"after {self.quiesce_bound_s:.0f} s: {'; '.join(left)}",
                },
            )
        anomalies += [
            {"inv": "harness", "kind": "harness_error", "detail": e.strip().splitlines()[-1], "ids": []}
            for e in self.errors
        ]
        anomalies += _client_anomalies(self.ops)
        result = {
            "seed": self.seed,
            "thread_id": self.thread_id,
            "setup_s": round(t_setup, 1),
            "heal_at_s": round(t_heal, 1),
            "healed": healed,
            "quiescence_s": quiet_s,
            "faults": [fault_label(f) for f in self.faults],
            "recovery": [
                {
                    "fault": fault_label(f),
                    "kind": f["fault"],
                    "left_down": bool(f.get("left_down")),
                    "runs_after": f.get("runs_after"),
                    "recovery_s": f.get("recovery_s"),
                }
                for f in self.faults
            ],
            "fault_kinds": sorted({f["fault"] for f in self.faults}),
            "failovers": failovers_of(self.faults),
            "ops": _count(f"{o['op']}:{o['result']}" for o in self.ops if o.get("type") == "op"),
            "orphans_reaped": orphans,
            "unexpected_exits": self.crashes,
            "stats": stats,
            "anomalies": anomalies,
        }
        (self.out / "result.json").write_text(json.dumps(result, indent=2, default=str))
        return result

    def recovery(self) -> None:
        """Per fault: from its end (or the heal) to the end of the last run of the thread that
        had not ended by then (0 when none was left): how long the work took to recover."""
        with psycopg.connect(self.c.owner_url) as conn:
            for f in self.faults:
                row = conn.execute(
                    "SELECT count(*), max(finished_at) - to_timestamp(%(e)s) FROM agent_runs "
                    "WHERE thread_id = %(t)s AND created_at <= to_timestamp(%(e)s) "
                    "AND (finished_at IS NULL OR finished_at > to_timestamp(%(e)s))",
                    {"e": f["end_wall"], "t": self.thread_id},
                ).fetchone()
                assert row is not None
                f["runs_after"] = int(row[0])
                f["recovery_s"] = round(row[1].total_seconds(), 1) if row[1] is not None else 0.0

    def quiesce(self, t_heal: float) -> tuple[list[str], float | None]:
        """Wait until nothing is left to do, twice a sweep interval apart (or the bound)."""
        quiet_since = None
        left = ["not polled"]
        while self.now() - t_heal < self.quiesce_bound_s:
            try:
                left = work_left(self.c.owner_url, [self.thread_id])
            except psycopg.Error as exc:
                left = [f"poll failed: {type(exc).__name__}: {exc}".splitlines()[0]]
            if left:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = self.now()
            elif self.now() - quiet_since >= self.c.sweep_s * 2:
                return [], round(quiet_since - t_heal, 1)
            time.sleep(0.5)
        return left, None


def _db_now(url: str) -> Any:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT clock_timestamp()").fetchone()
        assert row is not None
        return row[0]


def _acked_ids(op: str, entry: dict[str, Any]) -> list[tuple[str, str]]:
    doc = entry.get("doc") or {}
    if entry.get("result") != "ok" or not isinstance(doc, dict):
        return []
    if op in ("thread", "evidence"):
        return [(op, doc["id"])]
    if op == "node":
        return [("node", doc["version_id"])]
    if op == "dispatch":
        return [("dispatch", doc["dispatch_id"]), *(("run", r) for r in doc.get("run_ids") or [])]
    if op == "import":  # a failover's import: its threads (none when the file was imported before)
        return [("thread", t) for t in doc.get("thread_ids") or []]
    if op == "retraction" and doc.get("id"):
        return [("proposal", doc["id"])]
    if op == "consolidate" and doc.get("consolidation_id"):
        return [("consolidation", doc["consolidation_id"])]
    return []


def _client_anomalies(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the clients were told: one JSON error document on failure (docs/reference/formats.md), and no two
    callers told `committed` for one version with different consolidations."""
    out = []
    by_version: dict[str, set[str]] = {}
    for o in ops:
        doc = o.get("doc")
        if (
            o.get("op") == "consolidate"
            and o.get("result") == "ok"
            and (doc or {}).get("outcome") == "committed"
        ):
            assert isinstance(doc, dict)
            by_version.setdefault(doc["node_version_id"], set()).add(str(doc.get("consolidation_id")))
        if (
            o.get("type") == "op"
            and o.get("result") == "fail"
            and not (isinstance(doc, dict) and "error" in doc and doc.get("code") == o.get("rc"))
        ):
            last = (o.get("stderr") or "").strip().splitlines()[-1:] or [""]
            out.append(
                {
                    "inv": "g",
                    "kind": "cli_json_contract",
                    "ids": [],
                    "detail": f"`council {' '.join(o['args'][:2])} --json` at {o['t']}s exited {o.get('rc')} "
                    f"with no JSON error document on stdout; stderr ends: {last[0][:200]}",
                }
            )
    for v, ids in by_version.items():
        if len(ids) > 1:
            out.append(
                {
                    "inv": "c",
                    "kind": "two_callers_committed",
                    "detail": f"version {v}: {sorted(ids)}",
                    "ids": [v],
                }
            )
    return out


def _count(items: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for i in items:
        counts[i] = counts.get(i, 0) + 1
    return counts
