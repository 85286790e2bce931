"""The migrations and the checked-in schema snapshot agree: the schema is stated once, in
the migrations, and schema/schema.sql is their generated dump (tests/migrations/schema_dump.py)."""

from __future__ import annotations

import difflib
import hashlib
import json

import pytest
from sqlalchemy import Engine, text

from tests.migrations.schema_dump import REPO_ROOT, SCHEMA_FILE, dump_schema


def test_migrations_build_exactly_the_checked_in_schema(db_url: str) -> None:
    # Given a database built from the migrations (the test database is a copy of the migrated template)
    # When its catalogs are dumped
    actual = dump_schema(db_url)
    # Then the dump equals the snapshot under schema/
    expected = SCHEMA_FILE.read_text() if SCHEMA_FILE.exists() else ""
    if actual != expected:
        relative = str(SCHEMA_FILE.relative_to(REPO_ROOT))
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=f"{relative} (checked in)",
                tofile="built by the migrations",
            )
        )
        pytest.fail(
            f"{relative} is out of date with the migrations; run `make schema`.\n{diff}", pytrace=False
        )


@pytest.mark.parametrize(
    ("table", "record_id", "payload_column"),
    [("rule_sets", "council-default-v1", "body"), ("grouping_algorithms", "indep-v1", "params")],
)
def test_migration_seeds_pinned_records_with_their_canonical_hash(
    engine: Engine, table: str, record_id: str, payload_column: str
) -> None:
    # Given the migrated database
    # When the seeded record is read back
    with engine.connect() as conn:
        row = conn.execute(
            text(f"SELECT {payload_column}, {payload_column}_sha256 FROM {table} WHERE id = :id"),
            {"id": record_id},
        ).one()
    payload, stored_sha = row
    # Then its stored hash is SHA-256 of the canonical JSON of {"id": …, "<payload>": …}
    # (spelled out here rather than imported, so the test is an independent oracle)
    assert payload, f"{table}.{record_id} has an empty {payload_column}"
    canonical = json.dumps(
        {"id": record_id, payload_column: payload}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    assert stored_sha == hashlib.sha256(canonical.encode("utf-8")).hexdigest()
