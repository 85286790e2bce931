"""Correctness-critical SQL, kept as named queries in ``*.sql`` files.

Format (as in procrastinate): a line ``-- name --``, a comment line saying what
the query is for, then the query up to the next name line. Queries are written
with ``:param`` binds. Loaded once, referenced by name: :func:`driver_sql` gives the
text in psycopg's ``%(param)s`` style, which every store runs on the unit's psycopg
connection (``council.ledger.pg``; importing this module imports no SQLAlchemy).
"""

from __future__ import annotations

import functools
import re
from importlib import resources

_NAME = re.compile(r"^-- ([a-z_][a-z0-9_]*) --\s*$", re.MULTILINE)
# A ``:name`` bind (not ``::cast``, not ``\\:``).
_BIND = re.compile(r"(?<![:\w\\]):(\w+)(?!:)")


@functools.cache
def _queries() -> dict[str, str]:
    found: dict[str, str] = {}
    for entry in sorted(resources.files(__package__).iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".sql"):
            continue
        body = entry.read_text()
        marks = list(_NAME.finditer(body))
        for i, mark in enumerate(marks):
            end = marks[i + 1].start() if i + 1 < len(marks) else len(body)
            name = mark.group(1)
            if name in found:
                raise RuntimeError(f"duplicate named query {name!r} in {entry.name}")
            found[name] = body[mark.end() : end].strip()
    return found


@functools.cache
def driver_sql(name: str) -> str:
    """The named query for a psycopg cursor: each ``:param`` bind as ``%(param)s``
    (a literal ``%`` doubled, an escaped ``\\:`` a colon)."""
    body = _named(name).replace("%", "%%")
    return _BIND.sub(r"%(\1)s", body).replace("\\:", ":")


def _named(name: str) -> str:
    try:
        return _queries()[name]
    except KeyError:
        raise KeyError(f"no named query {name!r} in council/sql") from None


def names() -> list[str]:
    return sorted(_queries())
