"""The logical-node lock key is one SQL function, council_node_lock_key_v1 (migration
0032), and its value is the expression every statement wrote out before it: a lock taken
by a process still running the earlier statements and one taken through the function are
the same lock, so a rolling upgrade never lets two transactions decide one node at once."""

from __future__ import annotations

import uuid

import psycopg

from council import config
from council.ledger.unit import UnitOfWork

_OLD_KEY = "hashtextextended('council.node:' || CAST(%(id)s::uuid AS text), 0)"


def test_the_function_gives_the_key_the_statements_wrote_out(db_url: str) -> None:
    # Given some logical node ids
    ids = [uuid.uuid4() for _ in range(50)] + [uuid.UUID(int=0)]
    with psycopg.connect(config.libpq_url(db_url)) as conn:
        for node in ids:
            # When the key is computed both ways, then it is the same bigint
            new, old = conn.execute(
                f"SELECT council_node_lock_key_v1(%(id)s), {_OLD_KEY}", {"id": node}
            ).fetchone() or (None, None)
            assert new == old and isinstance(new, int), node


def test_a_node_locked_the_old_way_is_locked_for_the_new_statement(db_url: str, uow: UnitOfWork) -> None:
    # Given a transaction holding a node's lock taken with the written-out key
    node = uuid.uuid4()
    with psycopg.connect(config.libpq_url(db_url)) as holder:
        holder.execute(f"SELECT pg_advisory_xact_lock({_OLD_KEY})", {"id": node})
        # When another transaction tries the lock through the function, it is not granted
        with psycopg.connect(config.libpq_url(db_url)) as other:
            [granted] = other.execute(
                "SELECT pg_try_advisory_xact_lock(council_node_lock_key_v1(%(id)s))", {"id": node}
            ).fetchone() or [None]
            assert granted is False
        holder.rollback()
    # And the other way round: lock_node (the function) holds off the written-out key
    with uow() as tx, psycopg.connect(config.libpq_url(db_url)) as other:
        from council.ledger.locks import lock_node

        lock_node(tx.conn, node)
        [granted] = other.execute(
            f"SELECT pg_try_advisory_xact_lock({_OLD_KEY})", {"id": node}
        ).fetchone() or [None]
        assert granted is False


def test_the_planner_inlines_the_function(db_url: str) -> None:
    # Given the committer ordering node versions by their lock key
    with psycopg.connect(config.libpq_url(db_url)) as conn:
        # When the statement is planned
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                "EXPLAIN (VERBOSE) SELECT council_node_lock_key_v1(nv.logical_node_id) FROM node_versions nv"
            )
        )
    # Then the expression is inlined: no function call per row
    assert "hashtextextended" in plan and "council_node_lock_key_v1" not in plan
