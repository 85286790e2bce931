"""The nemesis: one fault, as a schedule's thread carries it out (see schedule.py).

Each fault is seeded by (seed, kind, moment), records what it did, and either
undoes itself after a while or is left for the heal.
"""

from __future__ import annotations

import random
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.soak.schedule import Schedule

# kind: weight in a mixed schedule
FAULT_WEIGHTS = {
    "kill_runs_worker": 3,
    "kill_commit_worker": 2,
    "kill_maint_or_beat": 1,
    "pause_worker": 3,
    "restart_redis": 2,
    "restart_postgres": 3,
    "pause_postgres": 1,
    "partition": 3,
    "invalidate_evidence": 2,
    "consolidate_race": 2,
}
# kinds that need the replicated cluster (replica.py, `--replicated`): never drawn for a mixed schedule
REPLICATED_FAULTS = ["failover"]
RUNS = ["runs1", "runs2"]


def run_fault(s: Schedule, kind: str, at: float) -> None:
    """Carry out one fault; its entry gets ``end_wall`` (epoch seconds) when the fault undid
    itself (a fault left for the heal gets the heal's time: Schedule.run)."""
    entry: dict[str, Any] = {"type": "fault", "fault": kind, "t": round(s.now(), 2)}
    _do(s, kind, random.Random(f"{s.seed}:{kind}:{at}"), entry)
    if not entry.get("left_down"):
        entry["end_wall"] = time.time()


def _do(s: Schedule, kind: str, r: random.Random, entry: dict[str, Any]) -> None:
    c = s.c
    if kind in ("kill_runs_worker", "kill_commit_worker", "kill_maint_or_beat"):
        busy: dict[str, int] = {}
        if kind == "kill_runs_worker":
            busy = s.wait_busy(5.0)
            name = r.choice(sorted(busy)) if busy and r.random() < 0.8 else r.choice(RUNS)
        else:
            name = "commit" if kind == "kill_commit_worker" else r.choice(["maint", "beat"])
        group = name == "beat" or r.random() < 0.5
        with s.target(name):
            entry.update(
                target=name,
                group=group,
                runs_in_flight=busy.get(name, 0),
                killed=c.kill_worker(name, group=group),
            )
            entry["left_down"] = r.random() < 0.3
            s.record_fault(entry)
            if entry["left_down"]:
                return  # the heal starts it
            time.sleep(r.uniform(0, 3))
            if not c.procs[name].running():
                c.start_worker(name)
    elif kind == "pause_worker":
        busy = s.wait_busy(5.0) if r.random() < 0.8 else {}
        name = r.choice(sorted(busy)) if busy else r.choice([*RUNS, "commit", "maint"])
        pause_s = c.lease_s + r.uniform(1, 5)  # longer than a lease: its runs are taken over
        with s.target(name):
            c.pause(name)
            entry.update(target=name, pause_s=round(pause_s, 1), runs_in_flight=busy.get(name, 0))
            s.record_fault(entry)
            time.sleep(pause_s)
            c.resume(name)
    elif kind == "restart_redis":
        down_s = r.uniform(0, 3)
        with s.target("redis"):
            c.stop_redis()
            entry.update(target="redis", down_s=round(down_s, 1), left_down=r.random() < 0.25)
            s.record_fault(entry)
            if entry["left_down"]:
                return
            time.sleep(down_s)
            c.start_redis()
    elif kind == "restart_postgres":
        mode = r.choice(["fast", "immediate", "kill"])
        down_s = r.uniform(0.5, 5)
        with s.target("postgres"):
            c.stop_postgres(mode)
            entry.update(target="postgres", mode=mode, down_s=round(down_s, 1), left_down=r.random() < 0.2)
            s.record_fault(entry)
            if entry["left_down"]:
                return
            time.sleep(down_s)
            c.start_postgres()
    elif kind == "pause_postgres":
        pause_s = r.uniform(2, c.lease_s + 4)
        with s.target("postgres"):
            if not c.procs["postgres"].running():
                return
            c.pause("postgres")
            entry.update(target="postgres", pause_s=round(pause_s, 1))
            s.record_fault(entry)
            time.sleep(pause_s)
            c.resume("postgres")
    elif kind == "partition":
        # one process cut off from one server through its proxy: refused (drop) or silent (stall)
        busy = s.wait_busy(5.0) if r.random() < 0.7 else {}
        name = r.choice(sorted(busy)) if busy else r.choice([*RUNS, "commit", "maint", "beat"])
        server = r.choice(["pg", "redis"])
        state = r.choice(["drop", "stall"])
        hold_s = r.uniform(2, c.lease_s + 5)
        with s.target(f"{name}:{server}"):
            c.partition(name, server, state)
            entry.update(
                target=f"{name}:{server}",
                state=state,
                hold_s=round(hold_s, 1),
                runs_in_flight=busy.get(name, 0),
                left_down=r.random() < 0.2,
            )
            s.record_fault(entry)
            if entry["left_down"]:
                return  # the heal ends the partition
            time.sleep(hold_s)
            c.partition(name, server, "up")
    elif kind == "invalidate_evidence":
        candidates = [e for e in s.evidence if e not in s.invalidated]
        if not candidates:
            return
        ev = r.choice(candidates)
        s.invalidated.add(ev)
        entry.update(target=ev)
        s.record_fault(entry)
        got = s.cli("invalidate", "evidence", "invalidate", ev, "--reason", f"soak {s.seed}: forged")
        if got.get("result") == "ok":
            s.record_op({"type": "ack", "op": "invalidate", "t": got["t"], "invalidated": ev})
    elif kind == "consolidate_race":
        if not s.versions:
            return
        version = r.choice(s.versions)
        n = r.randint(2, 3)
        entry.update(target=version, callers=n)
        s.record_fault(entry)
        ths = [
            threading.Thread(target=s.cli, args=("consolidate", "consolidate", "--node", version))
            for _ in range(n)
        ]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
    elif kind == "failover":
        from tests.soak.faults_failover import failover

        failover(s, r, entry)
    else:
        raise ValueError(f"unknown fault {kind}")


def fault_label(f: dict[str, Any]) -> str:
    kind = str(f["fault"])
    if kind == "restart_postgres":
        kind += f":{f.get('mode')}"
    elif kind.startswith("kill_"):
        kind += f":{f.get('target')}:{'group' if f.get('group') else 'main'}"
    elif kind == "pause_worker":
        kind += f":{f.get('target')}"
    elif kind == "partition":
        kind += f":{str(f.get('target')).split(':')[1]}:{f.get('state')}"
    elif kind == "failover":
        kind += ":skipped" if f.get("skipped") else f":{f.get('how')}:{f.get('during')}"
    if f.get("left_down"):
        kind += ":left-down"
    if f.get("runs_in_flight"):
        kind += ":mid-run"
    return kind
