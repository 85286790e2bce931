"""Transaction-scoped advisory locks (named SQL in council/sql/locks.sql), taken on
the unit's psycopg connection."""

from __future__ import annotations

from uuid import UUID

from council.ledger.pg import Connection, execute


def lock_node(conn: Connection, logical_node_id: UUID | str) -> None:
    execute(conn, "lock_node", logical_node_id=str(logical_node_id))


def lock_evidence_exclusive(conn: Connection, evidence_id: UUID | str) -> None:
    execute(conn, "lock_evidence_exclusive", evidence_id=str(evidence_id))


def lock_proposal(conn: Connection, proposal_id: UUID | str) -> None:
    execute(conn, "lock_proposal", proposal_id=str(proposal_id))


def lock_dispatch_key(conn: Connection, key: str) -> None:
    execute(conn, "lock_dispatch_key", key=key)


def lock_thread_budget(conn: Connection, thread_id: UUID | str) -> None:
    execute(conn, "lock_thread_budget", thread_id=str(thread_id))
