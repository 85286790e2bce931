"""A multi-host libpq URL (a primary and its standby, ``target_session_attrs=read-write``;
docs/operations/replication.md) reaches libpq as written and SQLAlchemy in the form its
psycopg dialect reads; a single-host URL is unchanged. A write a hot standby refused is a
lost connection (transient), the same SQLSTATE from a primary is not."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from council import config
from council.errors import CouncilError, TransientDatabaseError
from council.ledger import migrate
from council.ledger.pg import on_standby, translate_driver

MULTI = "postgresql://council_app:pw@10.0.0.1:5432,10.0.0.2:5433/council?target_session_attrs=read-write"


def test_single_host_urls_are_unchanged() -> None:
    url = "postgresql://u:p@db:5432/council?sslmode=require"
    assert migrate.dialect_url(url) == "postgresql+psycopg://u:p@db:5432/council?sslmode=require"
    assert config.libpq_url(url) == url
    assert config.libpq_url("postgres://u@db/x") == "postgresql://u@db/x"


def test_multi_host_url_reaches_sqlalchemy_as_host_parameters() -> None:
    sa = migrate.dialect_url(MULTI)
    url = make_url(sa)  # the netloc form raises ValueError in make_url: the port "5432,10.0.0.2:5433"
    args = create_engine(url).dialect.create_connect_args(url)[1]
    assert (args["host"], args["port"]) == ("10.0.0.1,10.0.0.2", "5432,5433")
    assert (args["user"], args["password"], args["dbname"]) == ("council_app", "pw", "council")
    assert args["target_session_attrs"] == "read-write"


def test_multi_host_url_reaches_libpq_as_written() -> None:
    parts = conninfo_to_dict(config.libpq_url(MULTI))
    assert (parts["host"], parts["port"], parts["target_session_attrs"]) == (
        "10.0.0.1,10.0.0.2",
        "5432,5433",
        "read-write",
    )
    assert config.checked_database_url("COUNCIL_DATABASE_URL", MULTI) == MULTI


def test_read_only_url_of_a_multi_host_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COUNCIL_DATABASE_URL", MULTI + "&password=x")
    monkeypatch.delenv("COUNCIL_DASHBOARD_DATABASE_URL", raising=False)
    got = config.read_only_database_url()
    assert got == (
        "postgresql://council_dashboard@10.0.0.1:5432,10.0.0.2:5433/council?target_session_attrs=read-write"
    )


def _read_only_error() -> psycopg.Error:
    return psycopg.errors.ReadOnlySqlTransaction("cannot execute INSERT in a read-only transaction")


def _connection(in_hot_standby: str) -> Any:
    """What on_standby reads of a psycopg connection: ``closed`` and its ParameterStatus."""
    info = SimpleNamespace(parameter_status=lambda name: in_hot_standby if name == "in_hot_standby" else None)
    return SimpleNamespace(closed=False, info=info)


def test_a_write_refused_by_a_standby_is_a_lost_connection() -> None:
    assert on_standby(_read_only_error(), _connection("on"))
    # the caller marks the connection lost: the error is then transient
    assert isinstance(translate_driver(_read_only_error(), invalidated=True), TransientDatabaseError)


def test_a_write_in_a_read_only_transaction_on_a_primary_is_not_retried() -> None:
    assert not on_standby(_read_only_error(), _connection("off"))
    assert not on_standby(_read_only_error(), None)
    got = translate_driver(_read_only_error())
    assert isinstance(got, CouncilError) and not isinstance(got, TransientDatabaseError)
