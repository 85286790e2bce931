"""A retry's coalescing mark lives no longer than the retry can wait plus one mark lifetime.

Found by the soak (issue 31 part 3; ../shared/tools/nemesis seed 23): a run whose task
waited on a retry after a Postgres restart lost its worker (SIGKILL); its retry mark
held the sweep off the run for the retry cap + 60 s (64 s with a 4 s cap and a 6 s
lease), where every other mark lets the sweep take orphaned work after one lease.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def _ttls(**env: str) -> dict[str, int]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    environ.update(env)
    done = subprocess.run(
        [sys.executable, "-c", "import json; from council.adapters import coalesce as c; "
         "print(json.dumps({'mark': c.MARK_TTL_S, 'retry': c.RETRY_MARK_TTL_S}))"],
        env=environ, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(json.loads(done.stdout))


def test_with_a_short_lease_a_retry_mark_outlives_the_retry_by_one_lease_at_most() -> None:
    ttls = _ttls(COUNCIL_RUN_LEASE_S="6", COUNCIL_RETRY_CAP_S="4")
    assert ttls["mark"] == 6
    assert ttls["retry"] == 4 + 6


def test_with_the_default_lease_a_retry_mark_waits_the_retry_cap_and_a_minute() -> None:
    ttls = _ttls()
    assert ttls["mark"] == 300
    assert ttls["retry"] == 30 + 60
