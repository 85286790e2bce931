"""The secrets this process knows, to take out of stored text (docs/architecture.md §11).

Known: the value of every environment variable whose name says it holds a
secret (provider keys such as ``OPENAI_API_KEY``, Council's ``COUNCIL_API_TOKEN``
and ``COUNCIL_API_READ_TOKEN``, any ``*_PASSWORD``), and the password or
secret-named query value of every URL in the environment or in the stack's state
file (the Postgres and Redis passwords). The redaction itself is
``council.domain.redaction``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import TypeVar, cast
from urllib.parse import parse_qsl, urlsplit

from council.domain.redaction import MIN_SECRET, Redactor
from council.domain.secrets import is_secret_name
from council.settings import snapshot

STATE_FILE = "stack.json"
P = TypeVar("P")


def _url_secrets(value: str) -> Iterator[str]:
    if "://" not in value:
        return
    try:
        parts = urlsplit(value.strip())
        password = parts.password
    except ValueError:
        return
    if password:
        yield password
    for name, item in parse_qsl(parts.query, keep_blank_values=False):
        if is_secret_name(name):
            yield item


def _state_values() -> Iterator[str]:
    from council.config import council_home

    try:
        state = json.loads((council_home() / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return

    def walk(value: object) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from walk(item)
        elif isinstance(value, list):
            for item in value:
                yield from walk(item)

    yield from walk(state)


def known_secrets(environ: Mapping[str, str] | None = None) -> set[str]:
    env = snapshot() if environ is None else environ
    found: set[str] = set()
    for name, value in env.items():
        if is_secret_name(name) and value.strip():
            found.add(value.strip())
        found.update(_url_secrets(value))
    for value in _state_values():
        found.update(_url_secrets(value))
    return {s for s in found if len(s) >= MIN_SECRET}


@functools.lru_cache(maxsize=16)
def _redactor(secrets: frozenset[str]) -> Redactor:
    return Redactor(secrets)


def redactor(extra: Iterable[str] = ()) -> Redactor:
    """A redactor of every known secret (read now: the environment may have changed) and ``extra``."""
    return _redactor(frozenset(known_secrets()) | frozenset(s for s in extra if s))


def redact(text: str, extra: Iterable[str] = ()) -> str:
    return redactor(extra).redact(text)


@functools.cache
def process_redactor() -> Redactor:
    """The redactor of the secrets this process knew when it first wrote (the ledger's:
    a changed environment is picked up by a restart, as `council restart` does)."""
    return redactor()


def redact_parameters(parameters: P, redactor: Redactor) -> P:
    """A statement's bound parameters with every string (or JSON text) redacted: the
    same shape, so of the same type (what mypy cannot follow through the walk)."""
    return cast(P, _redacted(parameters, redactor))


def _redacted(parameters: object, redactor: Redactor) -> object:
    if isinstance(parameters, dict):
        return {key: _redacted(value, redactor) for key, value in parameters.items()}
    if isinstance(parameters, list | tuple):
        return type(parameters)(_redacted(value, redactor) for value in parameters)
    if isinstance(parameters, str):
        return redactor.redact(parameters)
    if hasattr(parameters, "obj") and hasattr(parameters, "dumps"):  # psycopg's Json / Jsonb
        from psycopg.types.json import Json, Jsonb  # loaded already: it made this value

        if isinstance(parameters, Json | Jsonb):
            return type(parameters)(_redacted(parameters.obj, redactor), parameters.dumps)
    return parameters
