"""The failover fault (a replicated cluster only, replica.py): the primary lost, the standby
promoted, the old primary later back as the new one's standby.

Variants, seeded: ``how`` — ``kill`` (SIGKILL of the postmaster and its backends) or
``stop`` (SIGSTOP for longer than every timeout — a lease, libpq's connect_timeout —
then the promotion and the fence: the old primary SIGKILLed before it could run
again); ``during`` — plain, or landing in a consolidation batch (every version of
the thread consolidated at once), a retraction adjudication (a proposal on a
consolidation, adjudicated) or an import (a recorded-debate file); ``left_down``:
the old primary stays down until the heal rejoins it.

What a client was told before and after is recorded by the schedule's own CLI calls
(``Schedule.cli``); an import acknowledged is imported again after the heal, which
must write nothing (the same file is never imported twice).
"""

from __future__ import annotations

import json
import random
import threading
import time
from typing import TYPE_CHECKING, Any

import psycopg

if TYPE_CHECKING:
    from tests.soak.schedule import Schedule

DURING = ["plain", "consolidate", "retraction", "import"]


def failover(s: Schedule, r: random.Random, entry: dict[str, Any]) -> None:
    from tests.soak.replica import ReplicatedCluster

    c = s.c
    if not isinstance(c, ReplicatedCluster):
        raise RuntimeError(
            "the failover fault needs the replicated cluster (python -m tests.soak --replicated)"
        )
    how = r.choice(["kill", "kill", "stop"])
    during = r.choice(DURING)
    hold_s = c.lease_s + r.uniform(1, 4) if how == "stop" else 0.0
    with s.target("postgres"):
        if not c.procs["postgres"].running() or not c.procs["standby"].running():
            entry.update(skipped="no primary and standby pair to fail over")
            s.record_fault(entry)
            return
        work = _start(s, r, during)
        if work is None and during != "plain":
            during += "-none"  # nothing of it to start (no consolidation yet, no version): plain
        time.sleep(r.uniform(0.05, 0.8))  # the work under way
        done = c.failover(how, hold_s)
        entry.update(target=f"postgres:{done['old']}", during=during, hold_s=round(hold_s, 1), **done)
        entry["left_down"] = r.random() < 0.2
        s.record_fault(entry)
        if work is not None:
            work.join(timeout=120)
        if entry["left_down"]:
            return  # the heal rejoins it
        time.sleep(r.uniform(1, 5))
        entry["rejoined"] = c.rejoin()


def _start(s: Schedule, r: random.Random, during: str) -> threading.Thread | None:
    """The work the failover lands in, started in a thread of its own."""
    if during == "consolidate" and s.versions:
        versions = list(s.versions)

        def batch() -> None:
            ths = [
                threading.Thread(target=s.cli, args=("consolidate", "consolidate", "--node", v))
                for v in versions
            ]
            for th in ths:
                th.start()
            for th in ths:
                th.join()

        target = batch
    elif during == "retraction":
        found = _a_consolidation(s, wait_s=30)
        if found is None:
            return None

        def retract() -> None:
            got = s.cli(
                "retraction",
                "retraction",
                "propose",
                "--consolidation",
                found,
                "--reason",
                f"soak {s.seed}: failover",
            )
            proposal = (got.get("doc") or {}).get("id") if got.get("result") == "ok" else None
            if proposal:
                s.cli("adjudicate", "retraction", "adjudicate", "--proposal", str(proposal))

        target = retract
    elif during == "import":
        path = s.out / f"debates-{len(s.imports)}.jsonl"
        path.write_text(_debates(s.seed, len(s.imports), r.randint(3, 8)))
        s.imports.append(str(path))

        def imp() -> None:
            s.cli("import", "import", str(path))

        target = imp
    else:
        return None
    th = threading.Thread(target=target, daemon=True)
    th.start()
    return th


def _a_consolidation(s: Schedule, wait_s: float) -> str | None:
    """The thread's latest live consolidation, waiting up to ``wait_s`` for one."""
    deadline = time.monotonic() + wait_s
    while True:
        found = _latest_consolidation(s)
        if found is not None or time.monotonic() > deadline:
            return found
        time.sleep(1.0)


def _latest_consolidation(s: Schedule) -> str | None:
    try:
        with psycopg.connect(s.c.owner_url, connect_timeout=5) as conn:
            row = conn.execute(
                "SELECT id FROM consolidations WHERE thread_id = %s AND status = 'live' "
                "ORDER BY created_at DESC LIMIT 1",
                (s.thread_id,),
            ).fetchone()
    except psycopg.Error:
        return None
    return str(row[0]) if row else None


def _debates(seed: int, k: int, n: int) -> str:
    """``n`` recorded debates (council-debate-v1), unique to this seed and file."""
    lines = []
    for i in range(n):
        lines.append(
            json.dumps(
                {
                    "id": f"soak-{seed}-{k}-{i}",
                    "question": f"Which option holds? (soak seed {seed}, file {k}, record {i})",
                    "options": {"A": "the first", "B": "the second"},
                    "agents": [{"name": "a1", "model": "openai/m"}, {"name": "a2", "model": "anthropic/m"}],
                    "turns": [
                        {"agent": "a1", "round": 1, "answer": "A"},
                        {"agent": "a2", "round": 1, "answer": "B"},
                        {"agent": "a1", "round": 2, "answer": "A"},
                        {"agent": "a2", "round": 2, "answer": "A"},
                    ],
                }
            )
        )
    return "\n".join(lines) + "\n"


def check_imports(s: Schedule) -> list[dict[str, Any]]:
    """After the heal: each file imported during a failover, imported again, writes nothing when
    the first import was acknowledged, and whatever it wrote, the ledger holds one import of it."""
    from tests.soak.checker_log import _a

    out = []
    acked = {o["args"][1] for o in s.ops if o.get("op") == "import" and o.get("result") == "ok"}
    for path in s.imports:
        again = s.cli("import", "import", path)
        doc = again.get("doc") or {}
        if again.get("result") != "ok":
            out.append(_a("g", "import_after_failover_failed", f"{path}: {again.get('stderr', '')[:200]}"))
            continue
        if path in acked and doc.get("created"):
            out.append(
                _a(
                    "g",
                    "acknowledged_import_lost",
                    f"{path} was acknowledged, yet importing it again wrote it",
                )
            )
        with psycopg.connect(s.c.owner_url, connect_timeout=5) as conn:
            row = conn.execute(
                "SELECT count(*) FROM debate_imports WHERE file_sha256 = %s", (doc["file_sha256"],)
            ).fetchone()
        if row is None or int(row[0]) != 1:
            out.append(_a("b", "import_twice", f"{path}: {row and row[0]} imports of one file"))
    return out


def after_heal(s: Schedule) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The failover checks of a schedule, after the heal and quiescence: the live reader's feed and
    the writer's acknowledged writes (feed.Clients), the imports, and each failover's resumption
    time (by the writer's acknowledgements)."""
    anomalies: list[dict[str, Any]] = []
    stats: dict[str, Any] = {}
    if s.clients is not None:
        anomalies, stats = s.clients.stop_and_check(s.c.owner_url)
        for f in s.faults:
            if f["fault"] == "failover" and "lost_wall" in f:
                f.update(s.clients.writer.resumption(f["lost_wall"]))
    anomalies += check_imports(s)
    return anomalies, stats


def failovers_of(faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The schedule's failovers as its result reports them."""
    keys = ("how", "during", "left_down", "rejoined", "resumption_s", "last_ack_before_s", "hold_s")
    return [{k: f.get(k) for k in keys} for f in faults if f["fault"] == "failover" and "lost_wall" in f]
