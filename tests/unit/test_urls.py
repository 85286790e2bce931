"""Postgres URLs without SQLAlchemy (council.urls): another role's URL carries no password
at all, and the role a URL names is read back."""

from __future__ import annotations

import pytest

from council.errors import ConfigError
from council.urls import libpq_url, url_role, with_role


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "postgresql://app:s3cret@db.example:5432/council",
            "postgresql://council_dashboard@db.example:5432/council",
        ),
        (
            "postgresql://app@/council?host=/tmp/pg&password=s3cret&sslmode=require",
            "postgresql://council_dashboard@/council?host=%2Ftmp%2Fpg&sslmode=require",
        ),
        (
            "postgres://h1:5432,h2:5433/council?passfile=/x",
            "postgres://council_dashboard@h1:5432,h2:5433/council",
        ),
    ],
)
def test_another_roles_url_has_no_password_at_all(url: str, expected: str) -> None:
    shown = with_role(url, "council_dashboard")
    assert shown == expected
    assert "s3cret" not in shown and "passfile" not in shown
    assert url_role(shown) == "council_dashboard"


def test_the_role_of_a_url_is_read_back_or_none() -> None:
    assert url_role("postgresql://council_app:pw@localhost/db") == "council_app"
    assert url_role("postgresql://localhost/db") is None


def test_only_a_postgres_url_is_taken() -> None:
    assert libpq_url("postgresql+psycopg://u@h/d") == "postgresql://u@h/d"
    with pytest.raises(ConfigError, match="not a Postgres URL"):
        libpq_url("mysql://u@h/d")
