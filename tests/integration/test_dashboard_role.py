"""The read-only role ``council_dashboard`` (docs/architecture.md §8) against real Postgres:
it logs in (the test server trusts local connections) and may read the views
and nothing else."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import errors
from sqlalchemy import Engine, text

from council.services.consolidation import consolidate
from tests.builders import ACTOR, Ledger
from tests.dashboard import DASHBOARD_ROLE, dashboard_url
from tests.engines import uow_of
from tests.migrations.schema_dump import migrated_database, unique_name


def _relations(engine: Engine, kinds: str) -> list[tuple[str, str]]:
    """(name, a column that may be assigned) of the schema's relations of the given pg_class kinds."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT DISTINCT ON (c.relname) c.relname, a.attname "
                "FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 "
                "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = ANY(:kinds) "
                "AND a.attidentity = '' AND a.attgenerated = '' ORDER BY c.relname, a.attnum"
            ),
            {"kinds": list(kinds)},
        )
        return [(str(name), str(column)) for name, column in rows]


def _refused(conn: psycopg.Connection[Any], statement: str, error: type[Exception]) -> bool:
    try:
        conn.execute(statement.encode())
    except error:
        return True
    return False


def test_dashboard_role_logs_in_and_reads_every_view(engine: Engine, db_url: str) -> None:
    # Given a ledger with a consolidation
    ledger = Ledger.new(engine)
    consolidate(uow_of(engine), ledger.ready_node(), actor=ACTOR)
    views = [name for name, _ in _relations(engine, "v")]
    assert views and all(name.startswith("council_v_") for name in views)
    # When the dashboard role logs in
    with psycopg.connect(dashboard_url(db_url), autocommit=True) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (DASHBOARD_ROLE,)
        # Then it reads every view
        counts = {view: len(conn.execute(f"SELECT * FROM {view}".encode()).fetchall()) for view in views}
    assert (
        counts["council_v_threads"] == counts["council_v_decisions"] == counts["council_v_memory_items"] == 1
    )
    assert counts["council_v_independence_groups"] == 2


def test_dashboard_role_may_not_write_anything_nor_read_a_table(engine: Engine, db_url: str) -> None:
    # Given every table, sequence and view of the schema, from the catalog
    tables = _relations(engine, "rp")
    views = _relations(engine, "v")
    sequences = [name for name, _ in _relations(engine, "S")]
    assert len(tables) > 20 and views and sequences
    with psycopg.connect(dashboard_url(db_url), autocommit=True) as conn:
        # When it tries to read or change a table, each attempt is refused
        for table, column in tables:
            for statement in (
                f"SELECT * FROM {table} LIMIT 1",
                f"INSERT INTO {table} DEFAULT VALUES",
                f"UPDATE {table} SET {column} = {column}",
                f"DELETE FROM {table}",
                f"TRUNCATE {table}",
            ):
                assert _refused(conn, statement, errors.InsufficientPrivilege), statement
        # And so is any write through a view, a sequence or a new object
        for view, column in views:
            for statement in (
                f"INSERT INTO {view} DEFAULT VALUES",
                f"UPDATE {view} SET {column} = {column}",
                f"DELETE FROM {view}",
            ):
                assert _refused(conn, statement, psycopg.Error), statement
        for sequence in sequences:
            assert _refused(conn, f"SELECT nextval('{sequence}')", errors.InsufficientPrivilege), sequence
        assert _refused(conn, "CREATE TABLE public.dashboard_scratch (x int)", errors.InsufficientPrivilege)
        # Then the catalog agrees: SELECT on the views is all it holds on relations
        held = conn.execute(
            """
            SELECT c.relname, p.privilege FROM pg_class c,
                   unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER'])
                   AS p(privilege)
            WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
              AND has_table_privilege(c.oid, p.privilege)
            """
        ).fetchall()
        callable_functions = conn.execute(
            "SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace "
            "AND prorettype <> 'trigger'::regtype AND has_function_privilege(oid, 'EXECUTE')"
        ).fetchall()
    assert sorted(held) == sorted((view, "SELECT") for view, _ in views)
    # (besides the functions the views call, which return what the views show: the two
    # grouping functions (_v2 since revision 0036), and the decoding of a compact evaluation's reason ids)
    assert sorted(callable_functions) == [
        ("council_independence_links_v2",),
        ("council_independence_members_v2",),
        ("council_reason_ids_v1",),
    ]


def test_migrating_another_database_on_the_same_server_reuses_the_role(pg_server_url: str) -> None:
    # Given a server where the role already exists (the test template created it)
    # When one more database is migrated there
    with (
        migrated_database(pg_server_url, unique_name("council_views_again")) as url,
        psycopg.connect(dashboard_url(url), autocommit=True) as conn,
    ):
        # Then the migration succeeded, and the role reads the new database's views
        assert conn.execute("SELECT count(*) FROM council_v_threads").fetchone() == (0,)
        roles = conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s", (DASHBOARD_ROLE,))
        assert roles.fetchone() == (1,)
