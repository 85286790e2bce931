"""Agent runtimes: what one run costs on each runtime, against a local fake model server.

For ``litellm`` (one chat completion, the fake OpenAI chat server), ``codex-cli``
(the real Codex CLI, the fake Responses API) and ``claude-code`` (the real
Claude Code, the fake Messages API): ``RUNS`` runs one after another through
``execute_run`` — claim, compile, ask, check, apply, exactly what a worker's
task does — each answering after one tool step for the CLIs (it reads an
evidence file first). Reported per runtime: the median wall time a run, the
worker's own CPU a run (this process), the CPU the CLI's processes spent (its
children), and the peak resident memory of one CLI run (the guard and every
CLI process in its group, sampled every 20 ms in two further runs, apart from
the timed ones). Then how many CLI runs one
worker holds at once here: batches of 1, 2, 4, 8 and 16 concurrent runs (threads,
as a threads-pool worker runs them) — the largest batch whose runs all
succeeded with the batch done within the profile's 60 s deadline — and the
memory bound (available memory / peak RSS a run).

No target: the figures are recorded in docs/benchmarks.md. Needs the pinned
CLIs (`make agent-clis`); skipped runtimes are reported with the reason (under
``skipped``). A smoke run (``COUNCIL_BENCH_SMOKE``) makes one timed run of each runtime,
without a warm-up, one sampled run and a batch of 2.
"""

from __future__ import annotations

import os
import resource
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

import psutil

from benchmarks.harness import bench_database, sized, smoke
from council.adapters.scheduler import Recorder
from council.ledger.unit import UnitOfWork
from council.services.dispatch import dispatch
from council.services.execution import execute_run
from tests.agent_clis import KEYS, missing, profiles_toml
from tests.builders import Ledger
from tests.engines import engine_for, uow_of
from tests.fakes.anthropic_server import fake_anthropic
from tests.fakes.openai_server import fake_openai, reply
from tests.fakes.responses_server import fake_responses

RUNS = 5
BATCHES = (1, 2, 4, 8, 16)
DEADLINE_S = 60.0
SAMPLE_S = 0.02
AGENT = {"litellm": "plain", "codex-cli": "codex", "claude-code": "claude"}


@contextmanager
def _environment(answer: str) -> Iterator[None]:
    """Profiles for the three runtimes at their fake servers; real runs only, offline."""
    saved = dict(os.environ)
    with ExitStack() as stack, tempfile.TemporaryDirectory() as home:
        chat, _ = stack.enter_context(fake_openai([reply(answer)]))
        responses, _ = stack.enter_context(fake_responses("read"))
        anthropic, _ = stack.enter_context(fake_anthropic("read"))
        path = Path(home) / "profiles.toml"
        plain = (
            f'\n[profiles.plain]\nmodel = "openai/fake-model"\napi_base = "{chat}"\n'
            'api_key_env = "FAKE_OPENAI_KEY"\n'
        )
        path.write_text(
            profiles_toml(responses=responses, anthropic=anthropic, timeout_s=DEADLINE_S) + plain,
            encoding="utf-8",
        )
        os.environ.update(KEYS)
        os.environ.update(COUNCIL_PROFILES=str(path), COUNCIL_HOME=home, COUNCIL_OFFLINE="1")
        os.environ.update(COUNCIL_SIMULATE="auto", COUNCIL_RUN_LEASE_S=str(DEADLINE_S * 2))
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)


class _PeakRss:
    """The peak of the summed RSS of this process's descendants while it runs."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> _PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(SAMPLE_S):
            total = 0
            for child in me.children(recursive=True):
                try:
                    total += child.memory_info().rss
                except psutil.Error:
                    continue
            self.peak = max(self.peak, total)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _one(uow: UnitOfWork, thread_id: UUID, agent: str) -> str:
    created = dispatch(uow, Recorder(), thread_id, [agent], mode="independent", rounds=1, actor="bench")
    return execute_run(uow, Recorder(), created.run_ids[0]).status


def _sequential(uow: UnitOfWork, ledger: Ledger, runtime: str) -> dict[str, Any]:
    agent = AGENT[runtime]
    if not smoke():
        _one(uow, ledger.thread_id, agent)  # warm: imports, pools, the CLI's first start
    walls, cpus, cli_cpus, statuses = [], [], [], []
    for _ in range(sized(RUNS, 1)):
        cpu0, kids0, wall0 = time.process_time(), _children_cpu(), time.perf_counter()
        statuses.append(_one(uow, ledger.thread_id, agent))
        walls.append(time.perf_counter() - wall0)
        cpus.append(time.process_time() - cpu0)
        cli_cpus.append(_children_cpu() - kids0)
    peaks = []
    for _ in range(sized(2, 1)):  # sampled apart from the timed runs: the sampler costs this process CPU
        with _PeakRss() as rss:
            statuses.append(_one(uow, ledger.thread_id, agent))
        peaks.append(rss.peak)
    return {
        "runs": len(statuses),
        "succeeded": statuses.count("succeeded"),
        "wall_s_median": round(statistics.median(walls), 3),
        "worker_cpu_ms_median": round(statistics.median(cpus) * 1000, 1),
        "cli_cpu_ms_median": round(statistics.median(cli_cpus) * 1000, 1),
        "peak_rss_mb": round(max(peaks) / 2**20, 1),
    }


def _batches(uow: UnitOfWork, ledger: Ledger, runtime: str) -> dict[str, Any]:
    agent = AGENT[runtime]
    out: dict[str, Any] = {}
    held = 0
    for size in sized(BATCHES, (2,)):
        begin = time.perf_counter()
        with _PeakRss() as rss, ThreadPoolExecutor(size) as pool:
            statuses = list(pool.map(lambda _: _one(uow, ledger.thread_id, agent), range(size)))
        wall = time.perf_counter() - begin
        ok = statuses.count("succeeded") == size and wall < DEADLINE_S
        out[str(size)] = {
            "wall_s": round(wall, 2),
            "succeeded": statuses.count("succeeded"),
            "peak_rss_mb": round(rss.peak / 2**20, 1),
        }
        held = size if ok else held
        if not ok:
            break
    return {"batches": out, "held_at_once": held}


def run() -> dict[str, Any]:
    absent = missing()
    with bench_database() as (url, server):
        engine = engine_for(url)
        ledger = Ledger.new(engine, title="runtimes", evidence_items=4)
        heads = [
            str(ledger.node(f"Proposition {i}", cites=[ledger.evidence[i]])["version_id"]) for i in range(3)
        ]
        answer = (
            '{"summary": "[bench] endorsements.", "claims": ['
            + ", ".join(f'{{"node_version_id": "{h}", "type": "endorse", "confidence": 0.7}}' for h in heads)
            + "]}"
        )
        uow = uow_of(engine)
        results: dict[str, Any] = {}
        with _environment(answer):
            for runtime in AGENT:
                if runtime != "litellm" and absent:
                    results[runtime] = {"skipped": absent}
                    continue
                results[runtime] = _sequential(uow, ledger, runtime)
                if runtime != "litellm":
                    results[runtime].update(_batches(uow, ledger, runtime))
                    peak = results[runtime]["peak_rss_mb"] * 2**20
                    results[runtime]["memory_bound_at_once"] = int(psutil.virtual_memory().available // peak)
    ran = [r for r in results.values() if "skipped" not in r]
    skipped = {name: r["skipped"] for name, r in results.items() if "skipped" in r}
    return {
        "benchmark": "runtimes",
        **({"skipped": skipped} if skipped else {}),
        "ok": all(r["succeeded"] == r["runs"] for r in ran),
        "target": "none: figures recorded (docs/benchmarks.md)",
        "server": server,
        "cpus": os.cpu_count(),
        "load_1m": round(os.getloadavg()[0], 2),
        "runtimes": results,
    }
