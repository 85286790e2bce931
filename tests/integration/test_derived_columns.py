"""Derived columns follow their history, however the UPDATE is reached (migration 0007,
``council_guard_update_v2``), against real Postgres.

Version 1 of the guard let a derived column change whenever the UPDATE came from
inside another trigger (``pg_trigger_depth() >= 2``): a trigger of one's own, on a
temporary table, could set ``evidence.validity`` with no transition row. These tests
try exactly that, as the application's role and as the owner, and show version 1
would have let it through; then what the new rule refuses besides (an old transition
applied again, a backdated one) and what it still allows (two moves in one statement).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import psycopg
import pytest
from sqlalchemy import Engine

from council.domain.commands import NewAction
from council.services.claims import add_action
from council.services.consolidation import consolidate
from council.services.retraction import propose_retraction
from tests.builders import ACTOR, Ledger
from tests.engines import uow_of

EVIDENCE_SNEAK = (
    "UPDATE evidence SET validity = 'invalidated', validity_changed_at = now() WHERE id = '{evidence}'"
)


def _sneak_through_a_trigger(conn: psycopg.Connection[Any], update: str) -> None:
    """What defect 4 did: a temporary table whose trigger runs ``update`` (at trigger depth 2)."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS sneak (x int)")
    body = update.replace("'", "''")
    conn.execute(
        f"CREATE OR REPLACE FUNCTION pg_temp.sneak() RETURNS trigger LANGUAGE plpgsql AS "
        f"'BEGIN {body}; RETURN NULL; END'".encode()
    )
    conn.execute("DROP TRIGGER IF EXISTS sneak ON sneak")
    conn.execute("CREATE TRIGGER sneak AFTER INSERT ON sneak FOR EACH ROW EXECUTE FUNCTION pg_temp.sneak()")
    conn.execute("INSERT INTO sneak VALUES (1)")


def _refused_with_cn001(conn: psycopg.Connection[Any], update: str) -> str:
    with pytest.raises(psycopg.Error) as refused, conn.transaction():
        _sneak_through_a_trigger(conn, update)
    assert refused.value.sqlstate == "CN001", refused.value
    return str(refused.value)


@pytest.fixture
def consolidated(engine: Engine) -> Ledger:
    ledger = Ledger.new(engine)
    consolidate(uow_of(engine), ledger.ready_node(), actor=ACTOR)
    return ledger


@pytest.fixture(params=["app", "owner"])
def conn(request: pytest.FixtureRequest, db_url: str, owner_db_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A session as the application's role, then as the owner of the tables."""
    url = db_url if request.param == "app" else owner_db_url
    with psycopg.connect(url, autocommit=True) as connection:
        yield connection


def _validity(conn: psycopg.Connection[Any], evidence: UUID) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT validity, (SELECT count(*) FROM evidence_transitions WHERE evidence_id = e.id) "
        "FROM evidence e WHERE id = %s",
        (evidence,),
    ).fetchone()
    assert row is not None
    return tuple(row)


def test_a_trigger_of_ones_own_cannot_set_evidence_validity(
    consolidated: Ledger, conn: psycopg.Connection[Any]
) -> None:
    # Given valid evidence with no history
    evidence = consolidated.evidence[0]
    assert _validity(conn, evidence) == ("valid", 0)
    # When a trigger on a temporary table sets its validity in place
    message = _refused_with_cn001(conn, EVIDENCE_SNEAK.format(evidence=evidence))
    # Then the guard refuses it, and nothing changed
    assert "evidence.validity changes only by appending to its history" in message
    assert _validity(conn, evidence) == ("valid", 0)


def test_version_1_of_the_guard_let_that_trigger_through(consolidated: Ledger, owner_db_url: str) -> None:
    # Given the guard of migration 0001 put back, in a transaction that is rolled back
    evidence = consolidated.evidence[0]
    with psycopg.connect(owner_db_url) as conn:
        conn.execute("DROP TRIGGER evidence_guard ON evidence")
        conn.execute(
            "CREATE TRIGGER evidence_guard BEFORE UPDATE ON evidence FOR EACH ROW EXECUTE FUNCTION "
            "council_guard_update_v1('derived:validity', 'derived:validity_changed_at')"
        )
        # When the same trigger runs
        _sneak_through_a_trigger(conn, EVIDENCE_SNEAK.format(evidence=evidence))
        # Then the validity changed with no transition row: the defect the new guard closes
        assert _validity(conn, evidence) == ("invalidated", 0)
        conn.rollback()
    with psycopg.connect(owner_db_url) as conn:
        assert _validity(conn, evidence) == ("valid", 0)


# (table, what the sneaking trigger sets, which row) for every other derived column
SNEAKS = {
    "consolidations": "UPDATE consolidations SET status = 'retracted', status_changed_at = now()",
    "memory_items": "UPDATE memory_items SET status = 'retracted', status_changed_at = now()",
    "node_version_states": "UPDATE node_version_states SET status = 'killed', status_changed_at = now()",
    "branches": "UPDATE branches SET status = 'abandoned', status_changed_at = now()",
    "pending_actions": "UPDATE pending_actions SET status = 'satisfied', status_changed_at = now()",
    "retraction_proposals": "UPDATE retraction_proposals SET status = 'retracted', status_changed_at = now()",
    # the head of the consolidated node, pointed at another node's version
    "logical_nodes": "UPDATE logical_nodes SET head_version_id = (SELECT id FROM node_versions "
    "WHERE logical_node_id <> logical_nodes.id LIMIT 1), head_version_no = 7",
}


@pytest.mark.parametrize("table", sorted(SNEAKS))
def test_no_derived_column_moves_through_a_trigger_of_ones_own(
    engine: Engine, consolidated: Ledger, conn: psycopg.Connection[Any], table: str
) -> None:
    # Given a row in every guarded table: an open pending action, an open retraction proposal
    node = consolidated.node("The adapter needs a Postgres-only test tier")
    add_action(
        uow_of(engine),
        NewAction(
            thread=consolidated.thread_id,
            description="Run the adapter suite on PG 16",
            acceptance_condition="suite green",
            version=node["version_id"],
        ),
        actor=ACTOR,
    )
    (consolidation,) = conn.execute("SELECT id FROM consolidations").fetchone() or ()
    propose_retraction(uow_of(engine), consolidation, reason="the benchmark ran on a warm cache", actor=ACTOR)
    snapshot = f"SELECT to_jsonb(t) FROM {table} t ORDER BY id"
    before = conn.execute(snapshot.encode()).fetchall()
    assert before
    # When a trigger of one's own moves the derived column in place
    message = _refused_with_cn001(conn, SNEAKS[table])
    # Then it is refused, and every row is as it was
    assert f"{table}." in message and "changes only by appending to its history" in message
    assert conn.execute(snapshot.encode()).fetchall() == before


def _transition(conn: psycopg.Connection[Any], evidence: UUID, start: str, end: str, at: str = "") -> Any:
    columns, value = (", created_at", f", {at}") if at else ("", "")
    row = conn.execute(
        f"INSERT INTO evidence_transitions (evidence_id, from_status, to_status, reason, actor{columns}) "
        f"VALUES (%s, %s, %s, 'test step', 'tester'{value}) RETURNING created_at".encode(),
        (evidence, start, end),
    ).fetchone()
    assert row is not None
    return row[0]


def test_an_older_transition_cannot_be_applied_again(consolidated: Ledger, db_url: str) -> None:
    evidence = consolidated.evidence[0]
    with psycopg.connect(db_url, autocommit=True) as conn:
        # Given evidence challenged, then reaffirmed
        challenged_at = _transition(conn, evidence, "valid", "challenged")
        _transition(conn, evidence, "challenged", "reaffirmed")
        assert _validity(conn, evidence) == ("reaffirmed", 2)
        # When its validity is set back to the first transition's values, in place
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(
                "UPDATE evidence SET validity = 'challenged', validity_changed_at = %s WHERE id = %s",
                (challenged_at, evidence),
            )
        # Then it is refused: the column replays its history forward only
        assert refused.value.sqlstate == "CN001"
        assert _validity(conn, evidence) == ("reaffirmed", 2)


def test_a_backdated_transition_is_refused(consolidated: Ledger, db_url: str) -> None:
    evidence = consolidated.evidence[0]
    with psycopg.connect(db_url, autocommit=True) as conn:
        # Given evidence challenged just now
        _transition(conn, evidence, "valid", "challenged")
        # When a transition is appended with a time before that one
        with pytest.raises(psycopg.Error) as refused:
            _transition(conn, evidence, "challenged", "invalidated", at="now() - interval '1 day'")
        # Then applying it is refused, and it is not kept
        assert refused.value.sqlstate == "CN001"
        assert _validity(conn, evidence) == ("challenged", 1)


def test_two_moves_of_one_row_in_one_statement_apply_in_order(consolidated: Ledger, db_url: str) -> None:
    evidence = consolidated.evidence[0]
    with psycopg.connect(db_url, autocommit=True) as conn:
        # When one statement appends two transitions of the same evidence
        stamps = conn.execute(
            "INSERT INTO evidence_transitions (evidence_id, from_status, to_status, reason, actor) "
            "VALUES (%(e)s, 'valid', 'challenged', 'one', 't'), "
            "(%(e)s, 'challenged', 'invalidated', 'two', 't') "
            "RETURNING created_at",
            {"e": evidence},
        ).fetchall()
        # Then both apply (each trigger sees both rows), the last one last
        row = conn.execute(
            "SELECT validity, validity_changed_at FROM evidence WHERE id = %s", (evidence,)
        ).fetchone()
    assert row == ("invalidated", max(stamp for (stamp,) in stamps))
