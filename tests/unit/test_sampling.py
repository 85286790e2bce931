"""benchmarks/sampling.py: py-spy's raw lines are read with their thread, and the breakdown
charges each thread role its exact CPU and splits it by library in the proportions of the
role's samples, so the roles and the libraries each add up to the process's total."""

from __future__ import annotations

import sysconfig

import pytest

from benchmarks.sampling import RUN_THREADS, breakdown, by_step, charged_to, parse_raw

SITE = "/venv/lib/python3.11/site-packages"
STDLIB = sysconfig.get_paths()["stdlib"]
RAW = "\n".join(
    [
        f"thread (11): ThreadPoolExecutor-0_0;trace_task ({SITE}/celery/app/trace.py:1);"
        f"completion ({SITE}/litellm/main.py:2);dumps ({STDLIB}/json/__init__.py:3) 30",
        f"thread (11): ThreadPoolExecutor-0_0;trace_task ({SITE}/celery/app/trace.py:1);"
        f"execute ({SITE}/psycopg/cursor.py:4) 10",
        f"thread (12): MainThread;start ({SITE}/celery/worker/worker.py:5);"
        f"brpop ({SITE}/kombu/transport/redis.py:6) 20",
        f"thread (13): litellm-logging_0;success_handler ({SITE}/litellm/litellm_core_utils/x.py:7) 5",
        "thread (14) 2",
    ]
)


def test_raw_lines_keep_their_thread_name_and_frames() -> None:
    stacks = parse_raw(RAW)
    assert [(s.tid, s.thread, s.count) for s in stacks] == [
        (11, "ThreadPoolExecutor-0_0", 30),
        (11, "ThreadPoolExecutor-0_0", 10),
        (12, "MainThread", 20),
        (13, "litellm-logging_0", 5),
        (14, "", 2),
    ]
    assert stacks[0].frames[-1] == ("dumps", f"{STDLIB}/json/__init__.py")
    # json called by litellm is litellm's work
    assert charged_to(stacks[0].frames) == "litellm"


def test_roles_and_libraries_add_up_to_the_total() -> None:
    before = {11: 1.0, 12: 1.0, 13: 0.0}
    after = {11: 1.8, 12: 1.2, 13: 0.1}  # 0.8 + 0.2 + 0.1 = 1.1 s on live threads
    result = breakdown(parse_raw(RAW), before, after, total_s=1.2, runs=10)  # 0.1 s on threads gone
    by_thread = result["by_thread_ms_per_run"]
    assert by_thread["run threads (the task pool: the run itself)"] == pytest.approx(80.0)
    assert by_thread["celery main thread (consumer, event loop, timers)"] == pytest.approx(20.0)
    assert by_thread["litellm's own threads (logging, callbacks, cost)"] == pytest.approx(10.0)
    assert sum(by_thread.values()) == pytest.approx(120.0)
    assert sum(result["by_library_ms_per_run"].values()) == pytest.approx(120.0)
    # the run threads' 80 ms split 30:10 between litellm and psycopg by their samples
    run = result["by_thread_and_library_ms_per_run"]["run threads (the task pool: the run itself)"]
    assert run == {"litellm": pytest.approx(60.0), "psycopg": pytest.approx(20.0)}


def test_the_run_threads_split_by_step_in_the_proportions_of_their_samples() -> None:
    steps = (("the model call", "completion", "litellm/main.py"), ("a query", "Cursor.execute", "psycopg/"))
    raw = RAW.replace("execute (", "Cursor.execute (")
    split = by_step(parse_raw(raw), RUN_THREADS, 80.0, steps)
    assert split == {"the model call": pytest.approx(60.0), "a query": pytest.approx(20.0)}
