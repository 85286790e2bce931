"""A dispatch's idempotency key (migration 0027): one dispatch per key, found again by a
retry that asks for the same thing, refused for a retry that asks for something else.
Named SQL: council/sql/run_records.sql."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from uuid import UUID

from council.errors import BadInput
from council.ledger.locks import lock_dispatch_key
from council.ledger.pg import Connection, column, fetch_one


def request_sha256(
    thread_id: UUID,
    agents: Sequence[str],
    mode: str,
    rounds: int,
    proposal_id: UUID | None,
    controls: bool = False,
    budget_usd: Decimal | None = None,
    simulation: str = "auto",
) -> str:
    """What a keyed dispatch asked for, the whole request: its thread, agents (as named), mode,
    rounds and proposal, and — each named only when given, so earlier keys hash as before —
    control runs, its own budget and a simulation mode other than auto. A retry that changes
    any of them is another request, refused under the same key (issue 44: the budget and
    the simulation mode were left out, and such a retry silently replayed the first)."""
    asked: dict[str, object] = {
        "thread_id": str(thread_id),
        "agents": list(agents),
        "mode": mode,
        "rounds": rounds,
        "proposal_id": str(proposal_id) if proposal_id else None,
    }
    if controls:
        asked["controls"] = True
    if budget_usd is not None:
        asked["budget_usd"] = str(budget_usd.normalize())
    if simulation != "auto":
        asked["simulation"] = simulation
    return hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()


def first_of_key(
    conn: Connection, key: str, asked: str, agents: Sequence[str]
) -> tuple[UUID, list[UUID]] | None:
    """Under the key's lock (held to the end of the transaction, so racing retries make one
    dispatch): the dispatch made with ``key`` and its first round's runs in the order the
    agents were named, or None; BadInput when that dispatch asked for something else."""
    lock_dispatch_key(conn, key)
    first = fetch_one(conn, "dispatch_of_key", _Keyed, key=key)
    if first is None:
        return None
    if first.request_sha256 != asked:
        raise BadInput(
            f"key {key!r} was given to another dispatch, which asked for something else (its thread, "
            "agents, mode, rounds, proposal, controls, budget or simulation mode differ); use a new key"
        )
    return first.id, column(conn, "first_round_of_dispatch", UUID, dispatch_id=first.id, agents=list(agents))


@dataclass(frozen=True, slots=True)
class _Keyed:
    id: UUID
    request_sha256: str | None
