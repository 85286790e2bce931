"""Council as separate processes the soak starts, owns and breaks.

A private Postgres (the pgserver wheel's PG 16 binaries, ``initdb`` into a
temporary directory, on a free TCP port), a private ``redis-server`` (``--save ''``:
a restart loses every queued message and coalescing mark), two runs workers (a
threads pool and a prefork pool), a commit worker, a maintenance worker and
beat. Each worker and beat reaches Postgres and Redis through proxies of its
own (``proxy.py``), so a partition cuts one process off from one server; the
CLI calls of the schedule and the checker connect directly. Every process
leads its own process group and is signalled by its pid, never by name.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from tests.soak.proxy import Proxy, free_port

WORKERS: dict[str, list[str]] = {
    "runs1": ["--queues", "runs", "--pool", "threads", "--concurrency", "4"],
    "runs2": ["--queues", "runs", "--pool", "prefork", "--concurrency", "2"],
    "commit": ["--queues", "commit", "--pool", "prefork", "--concurrency", "1"],
    "maint": ["--queues", "maintenance", "--pool", "prefork", "--concurrency", "1"],
}
PROCESSES = [*WORKERS, "beat"]
BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]


def group_members(pgid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return out


def _kill_all(pids: list[int], sig: int = signal.SIGKILL) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes] | None = None
    paused: bool = False
    expected_down: bool = False  # the nemesis ended it: not a crash

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None


@dataclass
class Cluster:
    workdir: Path
    lease_s: float = 6.0
    sweep_s: float = 2.0
    sim_latency: str = "0.8±0.5"
    pg_port: int = field(default_factory=free_port)
    redis_port: int = field(default_factory=free_port)
    procs: dict[str, Proc] = field(default_factory=dict)
    proxies: dict[str, Proxy] = field(default_factory=dict)  # "runs1:pg", "runs1:redis", ...
    stopping: bool = False

    # ------------------------------------------------------------------ urls and env
    def db_url(self, port: int | None = None, user: str = "council_app", db: str = "council") -> str:
        return f"postgresql://{user}@127.0.0.1:{port or self.pg_port}/{db}"

    @property
    def app_url(self) -> str:
        return self.db_url()

    @property
    def owner_url(self) -> str:
        return self.db_url(user="postgres")

    def env(self, name: str | None = None) -> dict[str, str]:
        """The environment of a process; a worker's (``name``) goes through its proxies."""
        pg = self.proxies[f"{name}:pg"].port if name else self.pg_port
        redis = self.proxies[f"{name}:redis"].port if name else self.redis_port
        env = {k: v for k, v in os.environ.items() if not k.startswith(("COUNCIL_", "PROMETHEUS_"))}
        env.update(
            COUNCIL_DATABASE_URL=self.db_url(pg),
            COUNCIL_MIGRATE_DATABASE_URL=self.db_url(user="postgres"),
            COUNCIL_BROKER_URL=f"redis://127.0.0.1:{redis}/0",
            COUNCIL_HOME=str(self.workdir / "home"),
            COUNCIL_SIMULATE="always",
            COUNCIL_OFFLINE="1",
            COUNCIL_SIM_LATENCY=self.sim_latency,
            COUNCIL_RUN_LEASE_S=str(self.lease_s),
            COUNCIL_SWEEP_EVERY_S=str(self.sweep_s),
            COUNCIL_REVERIFY_EVERY_S=str(self.sweep_s * 1.5),
            COUNCIL_RETRY_MAX="4",
            COUNCIL_RETRY_BASE_S="1",
            COUNCIL_RETRY_CAP_S="4",
            COUNCIL_ACTOR="cli:soak",
            NO_COLOR="1",
            PYTHONUNBUFFERED="1",
        )
        return env

    # ------------------------------------------------------------------ postgres
    @property
    def pgdata(self) -> Path:
        return self.workdir / "pgdata"

    @staticmethod
    def pg_bin() -> Path:
        import pgserver

        found = Path(pgserver.__file__).parent / "pginstall" / "bin"
        if not (found / "initdb").exists():
            raise RuntimeError(f"no initdb in {found}")
        return found

    @staticmethod
    def _pg_user() -> tuple[int, int] | None:
        """Postgres refuses to run as root: as root, run it as an unprivileged user."""
        if os.getuid() != 0:
            return None
        for name in ("postgres", "nobody"):
            try:
                entry = pwd.getpwnam(name)
                return entry.pw_uid, entry.pw_gid
            except KeyError:
                continue
        raise RuntimeError("running as root and no unprivileged user to run Postgres as")

    def _as_pg(self, argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
        """One of Postgres's programs run to its end, as the user Postgres runs as."""
        uid, gid = self._pg_user() or (None, None)
        return subprocess.run(
            argv, check=check, capture_output=True, text=True, user=uid, group=gid, timeout=300
        )

    def _empty_pgdata(self, pgdata: Path) -> None:
        """``pgdata`` made anew, empty, owned by the user Postgres runs as."""
        shutil.rmtree(pgdata, ignore_errors=True)
        pgdata.mkdir(parents=True)
        user = self._pg_user()
        if user:
            os.chown(pgdata, *user)

    def init_postgres(self) -> None:
        self._empty_pgdata(self.pgdata)
        user = self._pg_user()
        if user:
            os.chmod(self.workdir, os.stat(self.workdir).st_mode | 0o001)  # Postgres's user passes through
            closed = [str(p) for p in self.workdir.parents if not os.stat(p).st_mode & 0o001]
            if closed:  # never open up a directory the soak did not make
                raise RuntimeError(f"Postgres runs as uid {user[0]} and cannot reach {self.workdir} "
                                   f"through {closed[0]}: choose a --workdir under /tmp")  # fmt: skip
        self._as_pg(
            [str(self.pg_bin() / "initdb"), "-D", str(self.pgdata), "-U", "postgres", "--auth=trust",
             "-E", "UTF8", "--no-sync"]
        )  # fmt: skip
        with open(self.pgdata / "postgresql.conf", "a") as f:
            f.write(
                f"\nlisten_addresses = '127.0.0.1'\nport = {self.pg_port}\nunix_socket_directories = ''\n"
                "max_connections = 300\nfsync = off\nshared_buffers = 64MB\nlog_min_messages = warning\n"
            )

    def start_postgres(self) -> None:
        self._launch_postgres(
            "postgres", self.pgdata, self.db_url(user="postgres", db="postgres"), "postgres"
        )

    def _launch_postgres(
        self, key: str, pgdata: Path, url: str, log: str, *, port: int | None = None, wait_s: float = 60
    ) -> None:
        """A postmaster on ``pgdata`` (on ``port``, else its configuration's) as ``procs[key]``,
        logging to logs/``log``.log; returns once ``url`` takes a connection."""
        if self.stopping:
            raise RuntimeError("the cluster is stopping")
        user = self._pg_user()
        out = open(self.workdir / "logs" / f"{log}.log", "ab")  # noqa: SIM115 - the child's
        proc = self.procs.setdefault(key, Proc(key))
        proc.popen = subprocess.Popen(
            [str(self.pg_bin() / "postgres"), "-D", str(pgdata), *(["-p", str(port)] if port else [])],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            user=user[0] if user else None,
            group=user[1] if user else None,
        )
        proc.paused = proc.expected_down = False
        deadline = time.monotonic() + wait_s
        while True:
            try:
                psycopg.connect(url, connect_timeout=2).close()
                return
            except psycopg.Error:
                if time.monotonic() > deadline or not proc.running():
                    raise RuntimeError(f"{log} did not start; see logs/{log}.log") from None
                time.sleep(0.2)

    def stop_postgres(self, mode: str) -> None:
        """fast (SIGINT), immediate (SIGQUIT) or kill (SIGKILL of the postmaster and its backends)."""
        proc = self.procs["postgres"]
        if not proc.running():
            return
        proc.expected_down = True
        pid = proc.pid
        if mode == "kill":
            _kill_all([pid, *group_members(pid)])
        else:
            os.kill(pid, signal.SIGINT if mode == "fast" else signal.SIGQUIT)
        try:
            proc.popen.wait(timeout=60)  # type: ignore[union-attr]
        except subprocess.TimeoutExpired:
            _kill_all([pid])
            proc.popen.wait(timeout=10)  # type: ignore[union-attr]
        deadline = time.monotonic() + 15
        while group_members(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        _kill_all(group_members(pid))  # backends of a killed postmaster

    def create_database(self) -> None:
        with psycopg.connect(self.db_url(user="postgres", db="postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE council")
        subprocess.run(
            [str(BIN / "council"), "db", "upgrade"], env=self.env(), check=True, capture_output=True, cwd=REPO
        )

    # ------------------------------------------------------------------ redis
    def start_redis(self) -> None:
        if self.stopping:
            raise RuntimeError("the cluster is stopping")
        import redis

        (self.workdir / "redis").mkdir(exist_ok=True)
        log = open(self.workdir / "logs" / "redis.log", "ab")  # noqa: SIM115 - the child's
        proc = self.procs.setdefault("redis", Proc("redis"))
        proc.popen = subprocess.Popen(
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(self.redis_port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                str(self.workdir / "redis"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        proc.paused = proc.expected_down = False
        deadline = time.monotonic() + 20
        while True:
            try:
                redis.Redis(port=self.redis_port, socket_timeout=1).ping()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop_redis(self) -> None:
        proc = self.procs["redis"]
        proc.expected_down = True
        if proc.running():
            os.kill(proc.pid, signal.SIGKILL)
            proc.popen.wait(timeout=30)  # type: ignore[union-attr]

    # ------------------------------------------------------------------ workers and beat
    def start_worker(self, name: str) -> None:
        if self.stopping:
            raise RuntimeError("the cluster is stopping")
        log = open(self.workdir / "logs" / f"{name}.log", "ab")  # noqa: SIM115 - the child's
        proc = self.procs.setdefault(name, Proc(name))
        if name == "beat":
            argv = [
                str(BIN / "celery"),
                "-A",
                "council.workers.app",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(self.workdir / "home" / "celerybeat-schedule"),
            ]
        else:
            argv = [
                str(BIN / "council"),
                "worker",
                *WORKERS[name],
                "--name",
                f"{name}@soak",
                "--loglevel",
                "INFO",
            ]
        proc.popen = subprocess.Popen(
            argv, env=self.env(name), stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO
        )
        proc.paused = proc.expected_down = False

    def kill_worker(self, name: str, *, group: bool) -> list[int]:
        """SIGKILL the main process (prefork pool processes are left orphaned, as after an OOM
        kill of the parent) or the whole process group."""
        proc = self.procs[name]
        if not proc.running():
            return []
        proc.expected_down = True
        killed = group_members(proc.pid) if group else [proc.pid]
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            os.kill(proc.pid, signal.SIGKILL)
        proc.popen.wait(timeout=30)  # type: ignore[union-attr]
        return killed

    def pause(self, name: str) -> None:
        proc = self.procs[name]
        if proc.running() and not proc.paused:
            os.killpg(proc.pid, signal.SIGSTOP)
            proc.paused = True

    def resume(self, name: str) -> None:
        proc = self.procs[name]
        if proc.popen is not None and proc.paused:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGCONT)
            proc.paused = False

    def partition(self, name: str, server: str, state: str) -> None:
        self.proxies[f"{name}:{server}"].set_state(state)

    def reap_orphans(self) -> dict[str, list[int]]:
        """Pool processes left in the group of a worker whose main process is gone."""
        out = {}
        for name in WORKERS:
            proc = self.procs.get(name)
            if proc is not None and proc.popen is not None and not proc.running():
                left = group_members(proc.pid)
                _kill_all(left)
                if left:
                    out[name] = left
        return out

    def unexpected_exits(self) -> list[dict[str, Any]]:
        """Processes that ended without the nemesis ending them (a crash), with their exit codes."""
        out = []
        for name, proc in self.procs.items():
            if proc.popen is not None and not proc.running() and not proc.expected_down:
                out.append({"name": name, "pid": proc.popen.pid, "returncode": proc.popen.returncode})
                proc.expected_down = True  # reported once
        return out

    # ------------------------------------------------------------------ whole cluster
    def up(self) -> None:
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        (self.workdir / "home").mkdir(parents=True, exist_ok=True)
        self.init_postgres()
        self.start_postgres()
        self.create_database()
        self.start_redis()
        for name in PROCESSES:
            for server, port in (("pg", self.pg_port), ("redis", self.redis_port)):
                proxy = Proxy(f"{name}:{server}", port)
                proxy.start()
                self.proxies[proxy.name] = proxy
            self.start_worker(name)

    def heal(self) -> list[str]:
        """Everything back: partitions healed, paused processes resumed, what is down started."""
        done = []
        for key, proxy in self.proxies.items():
            if proxy.state != "up":
                proxy.set_state("up")
                done.append(f"healed {key}")
        for name, proc in self.procs.items():
            if proc.paused:
                self.resume(name)
                done.append(f"resumed {name}")
        for name, start in (("postgres", self.start_postgres), ("redis", self.start_redis)):
            if not self.procs[name].running():
                start()
                done.append(f"started {name}")
        for name in PROCESSES:
            if not self.procs[name].running():
                self.start_worker(name)
                done.append(f"started {name}")
        return done

    def down(self) -> None:
        self.stop_workers()
        if "redis" in self.procs:
            self.stop_redis()
        if "postgres" in self.procs:
            self.resume("postgres")
            self.stop_postgres("fast")

    def stop_workers(self) -> None:
        """Every worker and beat ended, their proxies closed; the servers stay up."""
        self.stopping = True
        time.sleep(0.3)  # a start already past its check finishes and is stopped below
        for name in PROCESSES:
            proc = self.procs.get(name)
            if proc is None or proc.popen is None:
                continue
            self.resume(name)
            members = group_members(proc.pid)
            if proc.running():
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.popen.wait(timeout=10)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
            _kill_all(sorted(set(members) | set(group_members(proc.pid))))
            if proc.popen.poll() is None:
                proc.popen.wait(timeout=10)
        for proxy in self.proxies.values():
            proxy.close()
