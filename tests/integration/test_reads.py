"""The psycopg-only reads (``UnitOfWork.reading``): the same rows and the same
errors on a connection of their own (a CLI start, no SQLAlchemy) as on a pooled
SQLAlchemy connection (a worker, the web app), and one mapping of driver errors
for both kinds of connection."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine

from council.errors import CouncilError, Duplicate
from council.ledger import pg
from council.ledger.unit import UnitOfWork
from council.services.threads import create_thread, list_threads
from council.sql import driver_sql
from tests.engines import engine_for, uow_of

ACTOR = "test:reads"


def test_threads_are_listed_alike_on_an_own_and_on_a_pooled_connection(engine: Engine, db_url: str) -> None:
    made = [
        create_thread(uow_of(engine), title=f"thread {i}", objective="o", actor=ACTOR).id for i in range(3)
    ]
    own = list_threads(UnitOfWork(url=db_url))
    pooled = list_threads(uow_of(engine))
    assert [t.id for t in own.items] == made  # oldest first
    assert own == pooled
    assert own.json_document()["items"][0]["title"] == "thread 0"


def test_a_unit_made_from_a_url_opens_no_pool_for_a_read(db_url: str) -> None:
    unit = UnitOfWork(url=db_url)
    list_threads(unit)
    assert unit._pool is None
    with unit() as tx:  # a transaction opens it then
        assert tx.conn.execute("SELECT 1").fetchone() == (1,)
    assert unit._pool is not None


def test_an_own_read_transaction_is_read_only_and_its_errors_are_translated(db_url: str) -> None:
    with pytest.raises(CouncilError) as refused, pg.transaction(db_url) as conn:
        conn.execute("INSERT INTO grouping_algorithms (id) VALUES ('x')")
    assert not isinstance(refused.value, psycopg.Error)
    assert "read-only transaction" in str(refused.value)


def test_a_failing_read_fails_alike_on_both_connections(pg_server_url: str) -> None:
    """The server's own database is not migrated: the query fails the same way."""
    failures = []
    for unit in (UnitOfWork(url=pg_server_url), uow_of(engine_for(pg_server_url))):
        with pytest.raises(CouncilError) as failed:
            list_threads(unit)
        failures.append((type(failed.value), str(failed.value)))
    assert failures[0] == failures[1]
    assert 'relation "threads" does not exist' in failures[0][1]


def _duplicate_thread(row: dict[str, Any]) -> str:
    return (
        "INSERT INTO threads (id, title, objective, rule_set_id, grouping_algorithm_id) "
        f"VALUES ('{row['id']}', 't', 'o', '{row['rule_set_id']}', '{row['grouping_algorithm_id']}')"
    )


def test_driver_errors_map_to_the_same_project_errors_in_a_unit_or_not(engine: Engine, db_url: str) -> None:
    created = create_thread(uow_of(engine), title="t", objective="o", actor=ACTOR)
    statement = _duplicate_thread(created.model_dump())
    with pytest.raises(CouncilError) as in_unit, uow_of(engine)() as tx:
        tx.conn.execute(statement.encode())
    with psycopg.connect(db_url) as conn, pytest.raises(psycopg.Error) as raw:
        conn.execute(statement)
    direct = pg.translate_driver(raw.value)
    assert isinstance(in_unit.value, Duplicate)
    assert (type(direct), str(direct)) == (type(in_unit.value), str(in_unit.value))


def test_no_named_query_has_a_bind_that_ends_in_a_colon() -> None:
    # A ":ids:" (in a comment, say) is read by SQLAlchemy and for psycopg alike as the
    # bind ":id" followed by "s:", a parameter nobody passes (it failed the committer once).
    import re

    from council.sql import _named, names

    half = {n: m for n in names() for m in re.findall(r"(?<![:\w\\]):\w+:(?!:)", _named(n))}
    assert half == {}


@pytest.mark.parametrize(
    ("sql", "driver"),
    [
        ("SELECT * FROM t WHERE id = :id", "SELECT * FROM t WHERE id = %(id)s"),
        ("SELECT CAST(:a AS jsonb), x::text", "SELECT CAST(%(a)s AS jsonb), x::text"),
        ("SELECT 'a%' LIKE :p", "SELECT 'a%%' LIKE %(p)s"),
        ("SELECT '10\\:30'", "SELECT '10:30'"),
    ],
)
def test_named_queries_keep_their_binds_for_psycopg(
    sql: str, driver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import council.sql as named

    name = f"probe_{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(named, "_queries", lambda: {name: sql})
    assert driver_sql(name) == driver  # (council.sql.query, SQLAlchemy's reading of them, is gone)


def test_every_kind_of_id_resolves_against_its_table(engine: Engine) -> None:
    """Tx.resolve names its tables by attribute (imported when first used): each exists
    and answers a prefix look-up."""
    from council.errors import NotFound
    from council.ledger.unit import _ID_KINDS

    for kind in _ID_KINDS:
        with (
            pytest.raises(NotFound, match=f"no {kind} with an id starting 000000"),
            uow_of(engine)() as tx,
        ):
            tx.resolve(kind, "000000")
