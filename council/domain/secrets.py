"""Where a secret would hide in configuration: keys, headers and values shaped
like credentials (docs/architecture.md §11: a profile that carries one is refused).

Pure: the caller decides what to refuse and how to say it. Names are compared
case-insensitively with ``-`` read as ``_``, so ``X-Api-Key`` is ``x_api_key``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

_SECRET_NAMES = frozenset(
    {
        "api_key", "apikey", "key", "token", "secret", "password", "passwd", "pwd", "authorization",
        "proxy_authorization", "auth", "bearer", "credential", "credentials", "cookie", "set_cookie",
        "signature", "session", "private_key", "access_key", "access_key_id", "secret_access_key",
        "client_secret", "refresh_token", "access_token", "id_token", "session_token",
    }
)  # fmt: skip
_SECRET_SUFFIXES = ("_key", "_token", "_secret", "_password", "_passwd", "_credentials", "_apikey")
# Values that are credentials whatever they are called.
_SECRET_VALUE = re.compile(
    r"^\s*(bearer|basic)\s+\S"
    r"|^(sk|pk|rk)-[A-Za-z0-9_\-]{12,}"
    r"|^(ghp|gho|ghs|github_pat|glpat|xox[abpr])[-_][A-Za-z0-9_\-]{8,}"
    r"|^(hf|gsk|pplx|xai|nvapi|r8|fw)[-_][A-Za-z0-9_\-]{16,}"
    r"|^AKIA[0-9A-Z]{16}$"
    r"|^AIza[0-9A-Za-z_\-]{20,}",
    re.IGNORECASE,
)


_PARTS = re.compile(r"[/:@=,\s]+")


def is_secret_name(name: str) -> bool:
    normal = name.strip().lower().replace("-", "_")
    return normal in _SECRET_NAMES or normal.endswith(_SECRET_SUFFIXES)


def looks_like_secret(value: str) -> bool:
    return bool(_SECRET_VALUE.search(value))


def holds_secret_shape(value: str) -> bool:
    """Whether any part of ``value`` — split where a model name, a route or a URL-like
    string is (``/``, ``:``, ``@``, ``=``, ``,``, spaces) — looks like a credential:
    ``openai/sk-…`` hides a key behind a route."""
    return any(looks_like_secret(part) for part in _PARTS.split(value) if part)


def secret_paths(data: Mapping[str, object], prefix: str = "") -> list[str]:
    """Dotted paths of every secret-shaped key or value in ``data``, nested
    tables and lists included (``extra_headers.Authorization``, ``tags[1]``)."""
    return list(_walk(data, prefix))


def _walk(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if is_secret_name(str(key)):
                yield where
            else:
                yield from _walk(item, where)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]")
    elif isinstance(value, str) and looks_like_secret(value):
        yield path


def url_credentials(url: str) -> str | None:
    """What in ``url`` is a credential (a password, or a secret-named query
    parameter), or None."""
    parts = urlsplit(url)
    if parts.password or (parts.username and not parts.password):
        return "user information"
    for name, item in parse_qsl(parts.query, keep_blank_values=True):
        if is_secret_name(name) or looks_like_secret(item):
            return f"query parameter {name!r}"
    return None
