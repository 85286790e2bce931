"""Identifier parsing: a malformed id is bad input, never a driver error.

Whole ids are UUIDs. Wherever an id is taken, a unique prefix of at least
``MIN_PREFIX`` hex digits is accepted too; the ledger resolves it
(``council.ledger.lookup.resolve``).
"""

from __future__ import annotations

from uuid import UUID

from council.errors import BadInput

MIN_PREFIX = 6
SHORT = 8  # how many hex digits tables and the page print


def parse_id(value: str | UUID, what: str) -> UUID:
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value).strip())
    except ValueError:
        raise BadInput(f"malformed {what} id: {value!r} (expected a UUID)") from None


def parse_ids(values: list[str] | None, what: str) -> list[UUID]:
    """Parse and de-duplicate, keeping first-seen order."""
    seen: dict[UUID, None] = {}
    for value in values or []:
        seen.setdefault(parse_id(value, what), None)
    return list(seen)


def short(value: UUID | str) -> str:
    """The prefix a table prints; accepted back wherever an id is taken."""
    return str(value)[:SHORT]
