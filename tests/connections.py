"""Taking a database's connections away, as a Postgres restart or a network cut does."""

from __future__ import annotations

import psycopg


def end_every_other_connection(db_url: str) -> int:
    """End every connection to the database but this one's; how many ended."""
    with psycopg.connect(db_url, autocommit=True) as admin:
        ended = admin.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    return int(ended[0]) if ended else 0
