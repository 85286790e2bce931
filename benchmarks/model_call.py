"""What one model call costs the calling process: the gateway (litellm) against the
OpenAI SDK that litellm itself calls, to the same local OpenAI-compatible server (issue 36).

``CALLS`` chat completions each, one thread, after ``WARM_UP`` untimed, alternating
gateway and SDK ``ROUNDS`` times: the calling thread's CPU a call (``time.thread_time``)
and the process's (``time.process_time``: litellm's logging threads, and the fake server's
thread serving the request, which is the same on both sides). The request is a run's size
(8,000 characters of system and user messages); the answer is a contract output with usage.
The gateway's call is what a run's model step costs in the runs worker (its ``model call``
step in ``worker-profile``); the SDK's is the floor for the OpenAI-compatible path. No target.
A smoke run (``COUNCIL_BENCH_SMOKE``) makes 3 calls a side, once.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.dispatch import _environ
from benchmarks.harness import sized

CALLS = 300
WARM_UP = 20
ROUNDS = 2
MESSAGES = [{"role": "system", "content": "x" * 2000}, {"role": "user", "content": "y" * 6000}]


def _timed(call: Callable[[], Any], n: int) -> tuple[float, float]:
    for _ in range(sized(WARM_UP, 1)):
        call()
    thread0, process0 = time.thread_time(), time.process_time()
    for _ in range(n):
        call()
    return 1000 * (time.thread_time() - thread0) / n, 1000 * (time.process_time() - process0) / n


def run() -> dict[str, Any]:
    import openai

    from council.agents import gateway
    from tests.fakes.openai_server import AGENT_OUTPUT_JSON, fake_openai, reply

    calls = int(os.environ.get("COUNCIL_BENCH_MODEL_CALLS", sized(CALLS, 3)))
    rounds = sized(ROUNDS, 1)
    load = os.getloadavg()
    sides: dict[str, list[tuple[float, float]]] = {"gateway (litellm)": [], "openai SDK": []}
    # The gateway's litellm route (its OpenAI SDK route, council.agents.openai_direct, is the
    # other side's call plus the gateway's own checks).
    litellm_route = {"COUNCIL_OFFLINE": "1", "COUNCIL_OPENAI_DIRECT": "0"}
    with _environ(litellm_route), fake_openai([reply(AGENT_OUTPUT_JSON)]) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="council-no-key", max_retries=0)

        def through_gateway() -> Any:
            return gateway.complete("openai/fake-model", MESSAGES, {}, api_base=url)

        def through_sdk() -> Any:
            answer = client.chat.completions.create(model="fake-model", messages=MESSAGES, timeout=300)  # type: ignore[arg-type]
            return answer.choices[0].message.content, answer.usage

        for _ in range(rounds):
            sides["gateway (litellm)"].append(_timed(through_gateway, calls))
            sides["openai SDK"].append(_timed(through_sdk, calls))
    figures = {
        name: {
            "thread_cpu_ms_per_call": [round(t, 2) for t, _ in readings],
            "process_cpu_ms_per_call": [round(p, 2) for _, p in readings],
            "thread_cpu_ms_median": round(statistics.median(t for t, _ in readings), 2),
        }
        for name, readings in sides.items()
    }
    gateway_ms = figures["gateway (litellm)"]["thread_cpu_ms_median"]
    sdk_ms = figures["openai SDK"]["thread_cpu_ms_median"]
    return {
        "benchmark": "model-call",
        "calls": calls,
        "rounds": rounds,
        "sides": figures,
        "gateway_over_sdk_ms_per_call": round(gateway_ms - sdk_ms, 2),
        "load": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "ok": True,  # no target: a measure
    }
