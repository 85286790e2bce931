"""The benchmarks' Postgres CPU reading (benchmarks/harness.py): the whole server's,
backends that exited included. A pool that opens and closes connections took their CPU
with them from a reading of the live backends alone (the latency benchmark's N = 256
shape read 3–5 ms a run that way, against 13–15 ms for the whole server)."""

from __future__ import annotations

import time

import psutil
import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.pool import NullPool

from benchmarks.harness import postgres_cpu_s, server_cpu_s


def _burn_and_close(url: str) -> float:
    """CPU seconds one fresh backend spent on work, read just before its connection closed."""
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as conn:
        pid = int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())
        conn.execute(text("SELECT count(*) FROM generate_series(1, 4000000)")).scalar_one()
        times = psutil.Process(pid).cpu_times()
    engine.dispose()
    deadline = time.monotonic() + 10
    while psutil.pid_exists(pid) and time.monotonic() < deadline:  # until the postmaster reaped it
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                time.sleep(0.05)
                continue
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    assert not psutil.pid_exists(pid), "the closed backend never exited"
    return float(times.user + times.system)


def test_the_server_reading_keeps_the_cpu_of_a_backend_that_exited(engine: Engine) -> None:
    # Given the server runs on this machine (else the benchmarks fall back, and so does this test)
    before = server_cpu_s(engine)
    if before is None:
        pytest.skip("the test database's server is not a process this machine can read")
    live_before = postgres_cpu_s(engine)
    # When a backend works for a while and its connection closes
    spent = _burn_and_close(engine.url.render_as_string(hide_password=False))
    assert spent >= 0.1, f"the backend spent only {spent:.3f} s: nothing to see"
    # Then the whole server's reading kept that CPU, and the live backends' reading lost it
    after = server_cpu_s(engine)
    assert after is not None
    assert after - before >= 0.9 * spent
    assert postgres_cpu_s(engine) - live_before < 0.5 * spent
