"""JSON as Council takes it from outside (docs/operations/security.md: bounded and typed at
every edge): a file to import, a request body.

Python's ``json`` reads more than JSON and less safely than a server should: ``NaN`` and
``Infinity``, a duplicate key (the last wins, silently), a ``\\ud800`` escape that makes a
string no UTF-8 encoder can write, and a nesting deep enough to exhaust the stack. Here
each is refused with a reason (:class:`JsonRefused`): numbers are finite, keys unique,
strings valid Unicode, nesting at most ``MAX_DEPTH`` deep. :func:`items` reads a top-level
list or object one element at a time, so a limit on their number is enforced while
reading, before the rest is parsed. Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import NoReturn

MAX_DEPTH = 64
_SPACE = re.compile(r"[ \t\n\r]*")
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonRefused(ValueError):
    """Not JSON as Council takes it; the message says why (and where, when it can)."""


def _constant(name: str) -> NoReturn:
    raise JsonRefused(f"{name} is not a number JSON allows (numbers must be finite)")


def _number(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise JsonRefused(f"{text[:40]} is too large a number")
    return value


def _pairs(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found: dict[str, object] = {}
    for key, value in pairs:
        if key in found:
            raise JsonRefused(f"the key {key[:80]!r} appears twice in one object")
        found[key] = value
    return found


_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_number, object_pairs_hook=_pairs)
_LENIENT = json.JSONDecoder(parse_constant=_constant, parse_float=_number)  # a body: finite numbers


def loads(text: str | bytes) -> object:
    """The JSON value of ``text`` (bytes: UTF-8), or JsonRefused saying what is wrong."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonRefused(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    value, end = _decode(text, _SPACE.match(text).end())  # type: ignore[union-attr]  # always matches
    if _SPACE.match(text, end).end() != len(text):  # type: ignore[union-attr]
        raise JsonRefused(f"extra data after the JSON value at character {end}")
    return value


def body_problem(data: bytes) -> str | None:
    """Why a request body is not JSON as Council takes it (None: it is). Strings are left to
    the fields that read them, which name the field a lone surrogate is in."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"the body is not UTF-8: {exc.reason} at byte {exc.start}"
    try:
        _LENIENT.decode(text)
    except RecursionError:
        return "the body is nested too deeply"
    except JsonRefused as exc:
        return f"the body is not JSON as Council takes it: {exc}"
    except ValueError as exc:
        return f"the body is not JSON: {exc}"
    return None


def items(text: str, *, limit: int, what: str) -> Iterator[tuple[str, object]]:
    """The elements of a top-level JSON list (keyed by position) or object (by key), one at a
    time, each checked as :func:`loads` checks a value; JsonRefused as soon as there are
    more than ``limit`` of them (naming ``what`` they are), before the rest is read."""
    at = _SPACE.match(text).end()  # type: ignore[union-attr]
    if text[at : at + 1] not in ("[", "{"):
        raise JsonRefused("not a JSON list or object")
    closing = "]" if text[at] == "[" else "}"
    keyed = closing == "}"
    at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    seen: set[str] = set()
    count = 0
    while text[at : at + 1] != closing:
        if count:
            if text[at : at + 1] != ",":
                raise JsonRefused(f"expected ',' or '{closing}' at character {at}")
            at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
        count += 1
        if count > limit:
            raise JsonRefused(f"more than {limit} {what}")
        key = str(count - 1)
        if keyed:
            name, at = _decode(text, at)
            if not isinstance(name, str):
                raise JsonRefused(f"an object's key must be a string (at character {at})")
            key = name
            if key in seen:
                raise JsonRefused(f"the key {key[:80]!r} appears twice in one object")
            seen.add(key)
            at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
            if text[at : at + 1] != ":":
                raise JsonRefused(f"expected ':' at character {at}")
            at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
        value, at = _decode(text, at)
        yield key, value
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        if at >= len(text):
            raise JsonRefused(f"the JSON {'object' if keyed else 'list'} is not closed")
    if _SPACE.match(text, at + 1).end() != len(text):  # type: ignore[union-attr]
        raise JsonRefused(f"extra data after the JSON value at character {at + 1}")


def _decode(text: str, at: int) -> tuple[object, int]:
    try:
        value, end = _DECODER.raw_decode(text, at)
    except RecursionError:
        raise JsonRefused(f"nested more than {MAX_DEPTH} levels deep") from None
    except JsonRefused:
        raise
    except ValueError as exc:
        raise JsonRefused(f"not JSON: {exc}") from None
    _check(value, 1)
    return value, end


def _check(value: object, depth: int) -> None:
    """Nesting at most MAX_DEPTH deep; every string (keys too) valid Unicode."""
    if isinstance(value, str):
        if _SURROGATE.search(value):
            raise JsonRefused("a string holds a lone surrogate (a \\ud800-\\udfff escape, no character)")
        return
    if isinstance(value, dict | list):
        if depth > MAX_DEPTH:
            raise JsonRefused(f"nested more than {MAX_DEPTH} levels deep")
        for item in value.items() if isinstance(value, dict) else value:
            if isinstance(item, tuple):
                _check(item[0], depth)
                _check(item[1], depth + 1)
            else:
                _check(item, depth + 1)
