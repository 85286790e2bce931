"""Every named query in council/sql/*.sql still matches the schema the migrations
build (issue 32 §1): the server parses and plans each one (``PREPARE``; a ``COPY``
is opened and closed with no rows), as the application's role, in a transaction
rolled back after. A statement naming a column, table, function or type that the
migrated schema no longer has fails here, not on the first run that reaches it."""

from __future__ import annotations

import re

import psycopg

from council import config
from council.sql import _BIND, _named, names

_COPY = re.compile(r"^\s*COPY\b", re.IGNORECASE)


def _positional(body: str) -> str:
    """The statement with each distinct ``:param`` bind as ``$n`` (what PREPARE takes)."""
    numbers: dict[str, int] = {}

    def number(match: re.Match[str]) -> str:
        return f"${numbers.setdefault(match.group(1), len(numbers) + 1)}"

    return _BIND.sub(number, body).replace("\\:", ":")


def _statement(name: str) -> str:
    """The query without its leading comment lines."""
    lines = _named(name).splitlines()
    while lines and lines[0].lstrip().startswith("--"):
        lines.pop(0)
    return "\n".join(lines)


def _check(conn: psycopg.Connection[object], name: str) -> None:
    body = _statement(name)
    with conn.cursor() as cur:
        if _COPY.match(body):
            with cur.copy(body):
                pass  # no rows: the server has resolved the table and columns
        else:
            cur.execute(f"PREPARE council_check AS {_positional(body)}")
            cur.execute("DEALLOCATE council_check")


def test_every_named_query_prepares_against_the_migrated_schema(db_url: str) -> None:
    # Given the migrated schema, reached as the application's role
    failures: dict[str, str] = {}
    with psycopg.connect(config.libpq_url(db_url)) as conn:
        # When each named query is prepared on its own, in a transaction rolled back after
        for name in names():
            try:
                _check(conn, name)
            except psycopg.Error as exc:
                failures[name] = str(exc).strip().splitlines()[0]
            finally:
                conn.rollback()
    # Then the server accepted every one
    assert names(), "no named queries found"
    assert failures == {}


def test_a_query_that_names_a_missing_column_fails_to_prepare(db_url: str) -> None:
    # Given a statement naming a column the schema does not have
    body = "SELECT nv.no_such_column FROM node_versions nv WHERE nv.id = CAST(:id AS uuid)"
    with psycopg.connect(config.libpq_url(db_url)) as conn, conn.cursor() as cur:
        # When it is prepared as the check prepares a named query, then the server refuses it
        try:
            cur.execute(f"PREPARE council_check AS {_positional(body)}")
        except psycopg.errors.UndefinedColumn:
            return
    raise AssertionError("a statement naming a missing column prepared")
