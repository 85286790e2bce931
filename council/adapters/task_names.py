"""The Celery tasks' names and queues, stated once (the producer, the routes, beat, the
coalescing marks and the workers' task definitions all read them here)."""

from __future__ import annotations

from typing import Final

EXECUTE_RUN: Final = "council.execute_run"
EVALUATE_NODES: Final = "council.evaluate_nodes"
SWEEP: Final = "council.sweep"
CASCADE: Final = "council.cascade"
REVERIFY: Final = "council.reverify"

# Each task's queue: runs (I/O bound), commit, maintenance.
QUEUE_OF: Final = {
    EXECUTE_RUN: "runs",
    EVALUATE_NODES: "commit",
    SWEEP: "maintenance",
    CASCADE: "maintenance",
    REVERIFY: "maintenance",
}
