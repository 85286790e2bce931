"""The soak's cluster with a replicated ledger: a primary and one standby, and failover.

Two Postgres nodes from the pgserver wheel's binaries, ``a`` and ``b``, each on a
port of its own for its whole life (``postgres -p``: ``pg_rewind`` and
``pg_basebackup`` copy the other node's configuration files). Which one is the
primary changes; ``procs["postgres"]`` is always the primary's process and
``procs["standby"]`` the standby's, so every fault written against "postgres"
(restart, pause) hits the primary.

Everything reaches the ledger through libpq's multi-host URL,
``postgresql://u@127.0.0.1:PA,127.0.0.1:PB/council?target_session_attrs=read-write``
(a worker's through a proxy per node), so after a promotion every process finds
the new primary by itself (docs/operations/replication.md).

``sync=True`` (the supported deployment): ``synchronous_standby_names = '*'`` on
the primary and ``synchronous_commit = on``, so a commit is acknowledged only once
the standby has flushed it. ``sync=False``: the same pair replicating
asynchronously — what tests/replicated runs to show its tests fail without a
synchronous standby.

A failover (:meth:`ReplicatedCluster.failover`): the primary SIGKILLed (or SIGSTOPped
past every timeout, and fenced by a SIGKILL once the standby is promoted), the
standby promoted (``pg_ctl promote``), the new primary left without a synchronous
standby until the old primary rejoins — as Patroni's ``synchronous_mode`` does, so
writes go on — and later the old primary brought back as its standby
(:meth:`ReplicatedCluster.rejoin`: ``pg_rewind``, or a new base backup when the
rewind fails), then made synchronous again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from tests.soak.cluster import PROCESSES, Cluster, _kill_all
from tests.soak.proxy import Proxy, free_port

REPLICATION_CONF = """
wal_level = replica
max_wal_senders = 10
max_replication_slots = 10
wal_keep_size = '512MB'
wal_log_hints = on
hot_standby = on
wal_receiver_status_interval = 1s
"""


def node_pids(postmaster: int) -> list[int]:
    """A postmaster and its children: each child leads a session of its own (Postgres calls
    setsid() in every child), so the postmaster's process group holds only the postmaster."""
    out = [postmaster]
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == postmaster and fields[0] != "Z":
                out.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return out


@dataclass
class Node:
    name: str
    port: int
    pgdata: Path


@dataclass
class ReplicatedCluster(Cluster):
    sync: bool = True
    nodes: dict[str, Node] = field(default_factory=dict)
    primary: str = "a"
    failovers: list[dict[str, Any]] = field(default_factory=list)
    # the standby's replication connection passes through a proxy (tests/replicated stalls it)
    repl_proxy: Proxy | None = None

    def __post_init__(self) -> None:
        self.nodes = {
            "a": Node("a", self.pg_port, self.workdir / "pg-a"),
            "b": Node("b", free_port(), self.workdir / "pg-b"),
        }
        self.repl_proxy = Proxy("replication", self.nodes[self.primary].port)

    # ------------------------------------------------------------------ urls
    @property
    def standby(self) -> str:
        return "b" if self.primary == "a" else "a"

    @staticmethod
    def multi_url(ports: list[int], user: str = "council_app", db: str = "council") -> str:
        hosts = ",".join(f"127.0.0.1:{p}" for p in ports)
        return f"postgresql://{user}@{hosts}/{db}?target_session_attrs=read-write&connect_timeout=3"

    def node_url(self, node: str, db: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.nodes[node].port}/{db}"

    @property
    def ports(self) -> list[int]:
        return [self.nodes["a"].port, self.nodes["b"].port]

    @property
    def app_url(self) -> str:
        return self.multi_url(self.ports)

    @property
    def owner_url(self) -> str:
        return self.multi_url(self.ports, user="postgres")

    @property
    def pgdata(self) -> Path:
        return self.nodes[self.primary].pgdata

    def env(self, name: str | None = None) -> dict[str, str]:
        env = super().env(name)
        ports = [self.proxies[f"{name}:pg"].port, self.proxies[f"{name}:pg1"].port] if name else self.ports
        env["COUNCIL_DATABASE_URL"] = self.multi_url(ports)
        env["COUNCIL_MIGRATE_DATABASE_URL"] = self.multi_url(self.ports, user="postgres")
        return env

    # ------------------------------------------------------------------ nodes
    def init_postgres(self) -> None:
        super().init_postgres()  # into pg-a (self.pgdata: the primary's)
        with open(self.pgdata / "postgresql.conf", "a") as f:
            f.write(REPLICATION_CONF)

    def _start_node(self, node: str, key: str) -> None:
        n = self.nodes[node]
        self._launch_postgres(key, n.pgdata, self.node_url(node), f"postgres-{node}", port=n.port, wait_s=120)

    def start_postgres(self) -> None:
        """The primary (the restart of restart_postgres, the heal's start)."""
        self._start_node(self.primary, "postgres")

    def set_synchronous(self, on: bool) -> None:
        """The primary's synchronous_standby_names: '*' (any standby must flush a commit before
        it is acknowledged) when ``on`` and the pair is synchronous, else ''."""
        names = "*" if on and self.sync else ""
        with psycopg.connect(self.node_url(self.primary), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{names}'")
            conn.execute("SELECT pg_reload_conf()")

    def _standby_config(self, node: str) -> None:
        """What makes ``node`` a standby of the primary (``-R`` writes the same; written here
        too, as a rewind that found nothing to do may leave it out)."""
        n = self.nodes[node]
        assert self.repl_proxy is not None
        self.repl_proxy.upstream_port = self.nodes[self.primary].port
        (n.pgdata / "standby.signal").touch()
        with open(n.pgdata / "postgresql.auto.conf", "a") as f:
            f.write(
                f"\nprimary_conninfo = 'host=127.0.0.1 port={self.repl_proxy.port} user=postgres "
                f"application_name=node_{node}'\n"
            )
        user = self._pg_user()
        if user:
            for path in (n.pgdata / "standby.signal", n.pgdata / "postgresql.auto.conf"):
                os.chown(path, *user)

    def base_backup(self, node: str) -> None:
        """A new copy of the primary in ``node``'s directory, set up as its standby."""
        n = self.nodes[node]
        self._empty_pgdata(n.pgdata)
        os.chmod(n.pgdata, 0o700)
        primary = self.nodes[self.primary]
        self._as_pg(
            [str(self.pg_bin() / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port), "-U",
             "postgres", "-D", str(n.pgdata), "-R", "-X", "stream", "--no-sync", "-c", "fast"]
        )  # fmt: skip
        self._standby_config(node)

    def wait_streaming(self, node: str, *, as_sync: bool = False, timeout_s: float = 120) -> None:
        """Until the primary streams to ``node`` (``as_sync``, synchronous: and counts it as
        its synchronous standby)."""
        deadline = time.monotonic() + timeout_s
        want = ("sync",) if as_sync and self.sync else ("async", "sync", "potential", "quorum")
        while True:
            with (
                contextlib.suppress(psycopg.Error),
                psycopg.connect(self.node_url(self.primary), connect_timeout=2) as conn,
            ):
                row = conn.execute(
                    "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = %s",
                    (f"node_{node}",),
                ).fetchone()
                if row and row[0] == "streaming" and row[1] in want:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"standby {node} is not streaming after {timeout_s:.0f} s")
            time.sleep(0.2)

    def start_standby(self) -> None:
        node = self.standby
        self._start_node(node, "standby")
        self.wait_streaming(node)

    # ------------------------------------------------------------------ failover
    def failover(
        self, how: str = "kill", hold_s: float = 0.0, before_promote: Callable[[], None] | None = None
    ) -> dict[str, Any]:
        """Lose the primary and promote the standby. ``kill``: SIGKILL of the postmaster and
        its backends. ``stop``: SIGSTOP (a hung host) for ``hold_s``, then the promotion, then
        the old primary fenced (SIGKILL) before it can run again. The new primary has no
        synchronous standby until :meth:`rejoin`. Wall-clock moments are returned."""
        old, new = self.primary, self.standby
        out: dict[str, Any] = {"how": how, "old": old, "new": new}
        lost = self.procs["postgres"]
        if how == "kill":  # the postmaster and every backend at once, as a host that dies
            lost.expected_down = True
            _kill_all(node_pids(lost.pid))
            lost.popen.wait(timeout=30)  # type: ignore[union-attr]
        else:
            members = node_pids(lost.pid)
            _kill_all(members, signal.SIGSTOP)  # a hung host: nothing of it runs
            lost.paused = True
        # after the signal, not before: an acknowledgement after this moment cannot come from the
        # old primary (one in the moment before the signal would read as a resumption of ~0 s)
        out["lost_wall"] = time.time()
        if how != "kill":
            time.sleep(hold_s)
        if before_promote is not None:
            before_promote()
        self._as_pg(
            [str(self.pg_bin() / "pg_ctl"), "promote", "-D", str(self.nodes[new].pgdata), "-w", "-t", "120"]
        )
        out["promoted_wall"] = time.time()
        old_proc, new_proc = self.procs["postgres"], self.procs["standby"]
        self.procs["postgres"], self.procs["standby"] = new_proc, old_proc
        new_proc.name, old_proc.name = "postgres", "standby"
        self.primary = new
        self.set_synchronous(False)  # alone: writes go on (the old primary is down)
        if how != "kill":  # fence the hung old primary: it must never serve again as a primary
            old_proc.expected_down = True
            _kill_all(members)  # SIGKILL ends a stopped process too
            old_proc.paused = False
            old_proc.popen.wait(timeout=30)  # type: ignore[union-attr]
        self.failovers.append(out)
        return out

    def rejoin(self) -> str:
        """The old primary back as the standby of the new one: ``pg_rewind`` (its crash
        recovery first, as it was killed), else a new base backup; then synchronous again."""
        node = self.standby
        proc = self.procs.get("standby")
        if proc is not None and proc.running():
            proc.expected_down = True
            _kill_all(node_pids(proc.pid))
            proc.popen.wait(timeout=30)  # type: ignore[union-attr]
        how = "pg_rewind"
        if self.nodes[node].pgdata.exists():
            done = self._as_pg(
                [str(self.pg_bin() / "pg_rewind"), "--target-pgdata", str(self.nodes[node].pgdata),
                 "--source-server", f"host=127.0.0.1 port={self.nodes[self.primary].port} user=postgres "
                 "dbname=postgres", "-R", "--no-sync"],
                check=False,
            )  # fmt: skip
            if done.returncode != 0:
                how = f"base backup (pg_rewind: {done.stderr.strip().splitlines()[-1:]})"
        else:
            how = "base backup"
        if how == "pg_rewind":
            self._standby_config(node)
        else:
            self.base_backup(node)
        self.start_standby()
        self.set_synchronous(True)
        self.wait_streaming(node, as_sync=True)
        return how

    # ------------------------------------------------------------------ whole cluster
    def up_ledger(self) -> None:
        """The two nodes streaming (synchronously when ``sync``) and the ledger migrated: what
        tests/replicated uses; :meth:`up` adds Redis and the workers."""
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        (self.workdir / "home").mkdir(parents=True, exist_ok=True)
        self.init_postgres()
        self.start_postgres()
        assert self.repl_proxy is not None
        self.repl_proxy.start()
        self.base_backup(self.standby)
        self.start_standby()
        self.set_synchronous(True)
        self.wait_streaming(self.standby, as_sync=True)
        self.create_database()

    def up(self) -> None:
        self.up_ledger()
        self.start_redis()
        for name in PROCESSES:
            for key, port in (("pg", self.ports[0]), ("pg1", self.ports[1]), ("redis", self.redis_port)):
                proxy = Proxy(f"{name}:{key}", port)
                proxy.start()
                self.proxies[proxy.name] = proxy
            self.start_worker(name)

    def create_database(self) -> None:
        with psycopg.connect(self.node_url(self.primary), autocommit=True) as conn:
            conn.execute("CREATE DATABASE council")
        from tests.soak.cluster import BIN, REPO

        subprocess.run(
            [str(BIN / "council"), "db", "upgrade"], env=self.env(), check=True, capture_output=True, cwd=REPO
        )

    def partition(self, name: str, server: str, state: str) -> None:
        for key in ("pg", "pg1") if server == "pg" else (server,):
            self.proxies[f"{name}:{key}"].set_state(state)

    def heal(self) -> list[str]:
        done = super().heal()  # the primary started if it is down
        standby = self.procs.get("standby")
        if standby is None or not standby.running():
            done.append(f"rejoined {self.standby} as the standby ({self.rejoin()})")
        return done

    def caught_up(self, timeout_s: float = 60) -> None:
        """Until the standby has replayed everything the primary wrote so far."""
        with psycopg.connect(self.node_url(self.primary), autocommit=True) as conn:
            row = conn.execute("SELECT pg_current_wal_lsn()").fetchone()
        assert row is not None
        deadline = time.monotonic() + timeout_s
        with psycopg.connect(self.node_url(self.standby), autocommit=True) as conn:
            while True:
                done = conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (row[0],)).fetchone()
                if done and done[0]:
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError("the standby did not catch up")
                time.sleep(0.05)

    def down(self) -> None:
        super().down()
        if self.repl_proxy is not None:
            self.repl_proxy.close()
        if "standby" in self.procs:
            self.resume("standby")
            proc = self.procs["standby"]
            if proc.running():
                children = node_pids(proc.pid)[1:]
                proc.expected_down = True
                os.kill(proc.pid, signal.SIGINT)
                proc.popen.wait(timeout=60)  # type: ignore[union-attr]
                _kill_all(children)  # none left after a clean stop
