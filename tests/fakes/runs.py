"""Real :class:`~council.ledger.run_rows.ClaimedRun` values for tests that need a claimed
run without a ledger: the shape the claim returns, with what a test does not name left
at a plain run's values."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

from council.ledger.run_rows import ClaimedRun


def claimed(
    dispatch_id: UUID | None,
    mode: str,
    *,
    round: int = 1,
    dispatch_rounds: int | None = None,
    **more: Any,
) -> ClaimedRun:
    """A run taken for its first attempt on a simulated model; ``more`` sets any other field."""
    fields: dict[str, Any] = {
        "id": uuid4(),
        "attempt": 1,
        "thread_id": uuid4(),
        "dispatch_id": dispatch_id,
        "agent": "alpha",
        "model": "council-sim/alpha",
        "provider": "council-sim",
        "simulated": True,
        "round": round,
        "mode": mode,
        "proposal_id": None,
        "request": None,
        "request_sha256": None,
        "executor": None,
        "dispatch_rounds": dispatch_rounds,
        "quorum_rule": False,
    }
    return ClaimedRun(**(fields | more))
