"""A dispatch's idempotency key (migration 0027): one dispatch per key, found again by a
retry that asks for the same thing, refused for a retry that asks for something else."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from uuid import UUID

from sqlalchemy import Connection, func, select

from council.errors import BadInput
from council.ledger import tables as t
from council.ledger.locks import lock_dispatch_key


def request_sha256(
    thread_id: UUID, agents: Sequence[str], mode: str, rounds: int, proposal_id: UUID | None
) -> str:
    """What a keyed dispatch asked for: its thread, agents (as named), mode, rounds and proposal."""
    asked = {
        "thread_id": str(thread_id),
        "agents": list(agents),
        "mode": mode,
        "rounds": rounds,
        "proposal_id": str(proposal_id) if proposal_id else None,
    }
    return hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()


def first_of_key(
    conn: Connection, key: str, asked: str, agents: Sequence[str]
) -> tuple[UUID, list[UUID]] | None:
    """Under the key's lock (held to the end of the transaction, so racing retries make one
    dispatch): the dispatch made with ``key`` and its first round's runs in the order the
    agents were named, or None; BadInput when that dispatch asked for something else."""
    lock_dispatch_key(conn, key)
    first = conn.execute(
        select(t.dispatches.c.id, t.dispatches.c.request_sha256).where(t.dispatches.c.idempotency_key == key)
    ).first()
    if first is None:
        return None
    if first.request_sha256 != asked:
        raise BadInput(f"key {key!r} was given to another dispatch, which asked for something else")
    runs = conn.execute(
        select(t.agent_runs.c.id)
        .where(t.agent_runs.c.dispatch_id == first.id, t.agent_runs.c.round == 1)
        .order_by(func.array_position(list(agents), t.agent_runs.c.agent))
    ).scalars()
    return first.id, list(runs)
