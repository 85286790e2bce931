"""The reentry packet's read path: the frontier query, sized by the budget."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import Engine

from council.domain.reentry import ReentryPacket, build_packet
from council.errors import BadInput
from council.ledger import tables as t
from council.ledger.db import unit_of_work
from council.ledger.lookup import require
from council.sql import query

DEFAULT_BUDGET = 4000
MIN_BUDGET, MAX_BUDGET = 500, 200_000
DEPENDENCY_DEPTH = 3


def reentry_packet(
    engine: Engine, thread_id: UUID, *, budget: int = DEFAULT_BUDGET, blind: bool = False
) -> ReentryPacket:
    """Load lazily: the query fetches only as many rows as the budget could hold."""
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise BadInput(f"budget must be between {MIN_BUDGET} and {MAX_BUDGET} tokens, got {budget}")
    rows_cap = max(10, budget // 25)  # every item carries ids worth 25+ tokens: more could not fit
    with unit_of_work(engine) as conn:
        require(conn, t.threads, thread_id, "thread")
        rows = conn.execute(
            query("frontier"),
            {
                "thread_id": thread_id,
                "head_limit": rows_cap,
                "dep_depth": DEPENDENCY_DEPTH,
                "dep_limit": rows_cap,
                "counter_limit": rows_cap,
                "action_limit": rows_cap,
                "memory_limit": rows_cap,
            },
        ).scalar_one()
    return build_packet(rows, budget=budget, blind=blind)
