"""A dead agent's cost in time (issue 45): the wall time of one `council ask` (a blind round
and two deliberative ones) of two answering models, against the same ask with a third
agent whose endpoint refuses connections.

Real workers (a runs worker of three threads, a commit worker), real Postgres and Redis;
the models are local fake OpenAI-compatible servers answering at once. Each ask is timed
from the command's start to its exit, on a thread of its own; the two are alternated
``PAIRS`` times and the medians compared. Target: the ask with the dead agent takes at
most 1.5 times as long (its first round waits out the short schedule of retries for an
endpoint that refuses connections, ``COUNCIL_RETRY_UNREACHABLE_*``; its later rounds skip
it at once). A smoke run (``COUNCIL_BENCH_SMOKE``) times one pair.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from benchmarks.dispatch import bench_redis
from benchmarks.harness import bench_database, sized
from tests.conftest import free_port
from tests.fakes.chat_model import chat_model
from tests.processes import stop_groups, worker_environment

PAIRS = 3
TARGET = 1.5
PROFILE = '[profiles.{name}]\nmodel = "openai/{name}-model"\napi_key_env = ""\napi_base = "{url}"\n'
QUESTION = "Does the replica keep up under load?"


def _ask(env: dict[str, str], agents: str) -> tuple[float, int]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "council.cli", "ask", QUESTION, "--agents", agents, "--rounds", "2", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return time.monotonic() - started, done.returncode


def run() -> dict[str, Any]:
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="council-bench-dead-") as home:
        db_url, server = stack.enter_context(bench_database())
        redis_url, _ = stack.enter_context(bench_redis())
        urls = {name: stack.enter_context(chat_model())[0] for name in ("alpha", "beta")}
        urls["dead"] = f"http://127.0.0.1:{free_port()}/v1"
        profiles = Path(home) / "profiles.toml"
        profiles.write_text(
            "\n".join(PROFILE.format(name=n, url=u) for n, u in urls.items()), encoding="utf-8"
        )
        env = {
            **worker_environment(db_url, redis_url, Path(home), COUNCIL_PROFILES=str(profiles), NO_COLOR="1"),
            "COUNCIL_SIMULATE": "never",
        }
        procs: list[subprocess.Popen[bytes]] = []
        stack.callback(stop_groups, procs, 30)
        for queues, extra in (
            ("runs", ["--pool", "threads", "--concurrency", "3"]),
            ("commit,maintenance", []),
        ):
            with (Path(home) / f"worker-{len(procs)}.log").open("wb") as log:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "council.cli", "worker", "--queues", queues, *extra],
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        _ask(env, "alpha,beta")  # the workers warm, outside the timings
        alive, dead, codes = [], [], []
        pairs = sized(PAIRS, 1)
        for _ in range(pairs):
            seconds, code = _ask(env, "alpha,beta")
            alive.append(seconds)
            codes.append(code)
            seconds, code = _ask(env, "alpha,beta,dead")
            dead.append(seconds)
            codes.append(code)
    ratio = statistics.median(dead) / statistics.median(alive)
    return {
        "benchmark": "dead-agent",
        "server": server,
        "asks_without_s": [round(s, 2) for s in alive],
        "asks_with_dead_agent_s": [round(s, 2) for s in dead],
        "exit_codes": codes,  # 0 without, 1 with the dead agent (its runs failed)
        "ratio": round(ratio, 3),
        "target": TARGET,
        "ok": ratio <= TARGET and codes == [0, 1] * pairs,
    }
