"""The soak in `make test`: one short seeded schedule with faults against Council as real
processes (a worker killed mid-run and a worker partitioned from Postgres or Redis
through its proxy), checked from the ledger; then the checker validated by planting each
anomaly class in a copy of that ledger. `make soak` runs 50 longer schedules.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.soak.__main__ import main as soak_main
from tests.soak.checker import work_left
from tests.soak.cluster import BIN, REPO, Cluster
from tests.soak.plants import PLANTS, describe, missing_material, validate
from tests.soak.schedule import AGENTS, Schedule

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def soaked() -> Iterator[tuple[Cluster, dict[str, Any]]]:
    # not under pytest's basetemp: a pytest session run as root sets /tmp/pytest-of-root back to
    # 0700, and Postgres runs as an unprivileged user then
    workdir = Path(tempfile.mkdtemp(prefix="council-soak-test-"))
    cluster = Cluster(workdir, lease_s=6, sweep_s=2)
    try:
        cluster.up()
        result = Schedule(
            cluster,
            7,
            workdir / "seed-7",
            phase_s=10,
            quiesce_bound_s=90,
            kinds=["kill_runs_worker", "partition"],
            dispatches=(1, 1),
        ).run()
        yield cluster, result
    finally:
        cluster.down()
        shutil.rmtree(workdir, ignore_errors=True)


def test_a_schedule_with_a_kill_and_a_partition_leaves_no_anomaly(
    soaked: tuple[Cluster, dict[str, Any]],
) -> None:
    _, result = soaked
    assert sorted(f.split(":")[0] for f in result["faults"]) == ["kill_runs_worker", "partition"]
    assert result["anomalies"] == [], result["anomalies"]
    assert result["stats"]["runs"] >= 3 and result["stats"]["runs_by_status"].get("succeeded", 0) >= 1
    assert result["quiescence_s"] is not None


def test_the_checker_reports_each_planted_anomaly(soaked: tuple[Cluster, dict[str, Any]]) -> None:
    cluster, result = soaked
    if missing_material(cluster.owner_url, result["thread_id"]):
        top_up(cluster, result["thread_id"])
    assert missing_material(cluster.owner_url, result["thread_id"]) == []
    cluster.stop_workers()  # a database is copied only while nobody is connected to it
    found = validate(cluster.db_url(user="postgres", db="postgres"), result["thread_id"])
    assert set(found) == {"", *PLANTS}
    assert all(ok for ok, _ in found.values()), describe(found)


def top_up(cluster: Cluster, thread: str) -> None:
    """A fault-free independent dispatch on the healed cluster, then quiescence: the seed's
    faults may have left no live consolidation for the plants to write over."""
    done = subprocess.run(
        [str(BIN / "council"), "dispatch", "--thread", thread, "--agents", AGENTS, "--wait", "--json"],
        env=cluster.env(),
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-600:]
    deadline = time.monotonic() + 90
    while work_left(cluster.owner_url, [thread]) and time.monotonic() < deadline:
        time.sleep(0.5)


def test_bad_arguments_exit_2_with_the_reason(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert soak_main(["--schedules", "0", "--workdir", str(tmp_path)]) == 2
    assert "must be positive" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
