"""Identifier parsing: a malformed id is bad input, never a driver error."""

from __future__ import annotations

from uuid import UUID

from council.errors import BadInput


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
