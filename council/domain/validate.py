"""Input validation shared by every write path: a one-line reason, nothing written."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from pydantic import ValidationError

from council.errors import BadInput

# Limits (characters unless noted). Documented in docs/operations/configuration.md.
MAX_TITLE = 300
MAX_OBJECTIVE = 4_000
MAX_CONTENT = 20_000
MAX_RATIONALE = 8_000
MAX_REASON = 2_000
MAX_NAME = 100
MAX_EVIDENCE_BYTES = 5 * 1024 * 1024
MAX_REFERENCES = 200
MAX_LINT_CHARS = 200_000  # the longest prose `lint` reads (the evidence cap: no summary is longer)


def text(value: str | None, field: str, limit: int, *, allow_empty: bool = False) -> str:
    cleaned = (value or "").strip()
    if not cleaned and not allow_empty:
        raise BadInput(f"{field} must not be empty")
    if len(cleaned) > limit:
        raise BadInput(f"{field} is too long: {len(cleaned)} characters (limit {limit})")
    if "\x00" in cleaned:
        raise BadInput(f"{field} contains a NUL character")
    return cleaned


def lone_surrogate_at(value: object, where: str = "") -> str | None:
    """Where in ``value`` (a JSON-shaped document: dicts, lists, text) a text holds a lone
    surrogate — which JSON can spell (``"\\ud800"``) and an argument decoded from invalid
    UTF-8 carries, but which no stored text can hold; None if nowhere."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where or "value"
        return None
    if isinstance(value, dict):
        items: Iterable[tuple[object, object]] = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = lone_surrogate_at(key, where) or lone_surrogate_at(
            item, f"{where}.{key}" if where else str(key)
        )
        if found:
            return found
    return None


def choice(value: str, field: str, allowed: Iterable[str]) -> str:
    options = tuple(allowed)
    if value not in options:
        raise BadInput(f"invalid {field}: {value!r} (expected one of {', '.join(options)})")
    return value


def confidence(value: float | str | None, default: float = 0.5) -> Decimal:
    if value is None:
        value = default
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise BadInput(f"confidence must be a number, got {value!r}") from None
    if not number.is_finite() or number < 0 or number > 1:
        raise BadInput(f"confidence must be between 0 and 1, got {value}")
    return number.quantize(Decimal("0.001"))


def count(items: Iterable[object], field: str, limit: int = MAX_REFERENCES) -> None:
    n = sum(1 for _ in items)
    if n > limit:
        raise BadInput(f"too many {field}: {n} (limit {limit})")


def first_error(exc: ValidationError) -> str:
    """A pydantic validation error in one line: where the first problem is, and what it is."""
    errors = exc.errors()
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"]) or "value"
    return f"{where}: {first['msg']}{more}"
