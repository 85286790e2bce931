"""The application's role ``council_app`` (migration 0007, docs/architecture.md §11) on real Postgres:
no superuser, owner of nothing, and so unable to switch the ledger's triggers off.

Every other test reaches the database as this role too (tests/conftest.py), so the
application's own paths (CLI, services, workers, web) are what shows its privileges
suffice; here it tries what it must never manage.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine

from council.services.consolidation import consolidate
from tests.builders import ACTOR, Ledger
from tests.conftest import APP_ROLE
from tests.engines import uow_of

# A table of each kind: append-only, guarded, the event log.
TABLES = ("claims", "evidence", "events")
TRIGGERS = {"claims": "claims_immutable", "evidence": "evidence_guard", "events": "events_immutable"}


@pytest.fixture
def app(db_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(db_url, autocommit=True) as conn:
        yield conn


def _refused(conn: psycopg.Connection[Any], statement: str) -> str:
    """The SQLSTATE that refused ``statement`` (it must be refused)."""
    with pytest.raises(psycopg.Error) as refused:
        conn.execute(statement.encode())
    sqlstate = refused.value.sqlstate
    assert sqlstate is not None, statement
    return sqlstate


def test_the_app_role_is_no_superuser_and_owns_nothing(app: psycopg.Connection[Any]) -> None:
    # Given the role the application logs in as
    assert app.execute("SELECT current_user").fetchone() == (APP_ROLE,)
    # Then it holds no attribute beyond logging in
    attributes = app.execute(
        "SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls FROM pg_roles "
        "WHERE rolname = current_user"
    ).fetchone()
    assert attributes == (False, False, False, False, False)
    # And owns no relation, function or schema of the database, nor the database
    owned = app.execute(
        """
        SELECT 'relation ' || relname FROM pg_class WHERE relowner = 'council_app'::regrole
        UNION ALL SELECT 'function ' || proname FROM pg_proc WHERE proowner = 'council_app'::regrole
        UNION ALL SELECT 'schema ' || nspname FROM pg_namespace WHERE nspowner = 'council_app'::regrole
        UNION ALL SELECT 'database ' || datname FROM pg_database WHERE datdba = 'council_app'::regrole
        """
    ).fetchall()
    assert owned == []


def test_the_app_role_cannot_switch_the_triggers_off(engine: Engine, app: psycopg.Connection[Any]) -> None:
    # Given a ledger with a consolidation
    ledger = Ledger.new(engine)
    consolidate(uow_of(engine), ledger.ready_node(), actor=ACTOR)
    before = app.execute("SELECT (SELECT count(*) FROM claims), (SELECT count(*) FROM events)").fetchone()
    # When the application's role tries to skip every trigger for its session
    # Then only a superuser may
    assert _refused(app, "SET session_replication_role = replica") == "42501"
    assert app.execute("SHOW session_replication_role").fetchone() == ("origin",)
    for table in TABLES:
        trigger = TRIGGERS[table]
        # And disabling, dropping or replacing a trigger needs the owner
        for statement in (
            f"ALTER TABLE {table} DISABLE TRIGGER {trigger}",
            f"ALTER TABLE {table} DISABLE TRIGGER ALL",
            f"ALTER TABLE {table} DISABLE TRIGGER USER",
            f"DROP TRIGGER {trigger} ON {table}",
            f"CREATE TRIGGER intruder BEFORE UPDATE ON {table} FOR EACH ROW "
            "EXECUTE FUNCTION suppress_redundant_updates_trigger()",
            f"ALTER TABLE {table} OWNER TO {APP_ROLE}",
            f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey",
            f"DROP TABLE {table} CASCADE",
        ):
            assert _refused(app, statement) == "42501", statement
        # And rows can be neither deleted nor truncated
        for statement in (f"DELETE FROM {table}", f"TRUNCATE {table} CASCADE"):
            assert _refused(app, statement) == "42501", statement
    # And nothing can be created to own instead
    assert _refused(app, "CREATE TABLE public.mine (x int)") == "42501"
    # And the trigger functions cannot be attached to anything (EXECUTE is the owner's)
    app.execute("CREATE TEMP TABLE scratch (id uuid, from_status text, to_status text)")
    assert (
        _refused(
            app,
            "CREATE TRIGGER apply AFTER INSERT ON scratch FOR EACH ROW EXECUTE FUNCTION "
            "council_apply_transition_v1('evidence', 'id', 'validity', 'validity_changed_at')",
        )
        == "42501"
    )
    # And every trigger is still enabled, every row still there
    enabled = app.execute(
        "SELECT DISTINCT tgenabled FROM pg_trigger WHERE NOT tgisinternal "
        "AND tgrelid::regclass::text = ANY(%s)",
        (list(TABLES),),
    ).fetchall()
    assert enabled == [("O",)]
    after = app.execute("SELECT (SELECT count(*) FROM claims), (SELECT count(*) FROM events)").fetchone()
    assert after == before


def test_a_direct_update_of_a_guarded_column_is_refused_to_the_app_role(
    engine: Engine, app: psycopg.Connection[Any]
) -> None:
    # Given evidence and a live consolidation with its stable memory
    ledger = Ledger.new(engine)
    consolidate(uow_of(engine), ledger.ready_node(), actor=ACTOR)
    evidence = ledger.evidence[0]
    for statement in (
        # When a derived column is set in place, without a history row
        f"UPDATE evidence SET validity = 'invalidated' WHERE id = '{evidence}'",
        "UPDATE consolidations SET status = 'retracted'",
        "UPDATE memory_items SET status = 'retracted'",
        # Or an immutable column of a guarded table, or a row of an append-only one
        f"UPDATE evidence SET content = 'rewritten' WHERE id = '{evidence}'",
        "UPDATE claims SET confidence = 0.01",
    ):
        # Then the guard refuses it (CN001), or the privilege does (42501: no UPDATE on claims)
        assert _refused(app, statement) in ("CN001", "42501"), statement
    assert _refused(app, "UPDATE claims SET confidence = 0.01") == "42501"
    assert _refused(app, "UPDATE memory_items SET status = 'retracted'") == "CN001"
    # And nothing moved
    assert app.execute("SELECT DISTINCT validity FROM evidence").fetchall() == [("valid",)]
    assert app.execute("SELECT DISTINCT status FROM memory_items").fetchall() == [("stable",)]


def test_the_app_role_reads_no_view_and_takes_no_other_role(app: psycopg.Connection[Any]) -> None:
    # The views are the dashboards' (council_dashboard), not the application's
    assert _refused(app, "SELECT * FROM council_v_threads") == "42501"
    # And it cannot take another role's rights
    assert _refused(app, "SET ROLE council_dashboard") == "42501"
