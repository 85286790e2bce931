"""The secrets this process knows, by name (docs/architecture.md §11, docs/operations/security.md).

Known, and only these — never a variable because its name looks secret (``PWD``,
``PATH`` and ``HOME`` are not secrets, and an ordinary path must never be rewritten):

- the provider keys: the value of every variable a profile may read its key from
  (``council.domain.key_variables``: each route's and family's own, each profile's
  ``api_key_env`` in the profiles file and the ``COUNCIL_PROFILE_*`` overrides);
- Council's tokens: ``COUNCIL_API_TOKEN`` and ``COUNCIL_API_READ_TOKEN``;
- the database and broker passwords: of ``COUNCIL_DATABASE_URL``,
  ``COUNCIL_MIGRATE_DATABASE_URL``, ``COUNCIL_DASHBOARD_DATABASE_URL`` and
  ``COUNCIL_BROKER_URL``, and of every URL in the embedded stack's state file;
- what a caller adds for one text (an agent CLI's copied login tokens, its attempt's
  dummy key: ``council.agents.runtimes.cli``).

Values under 8 characters are not treated as secrets. Finding them, in every encoding
and decoding, is ``council.domain.redaction``; :func:`refuse_in_parameters` is the one
check every write of the ledger passes (``council.ledger.pg``).
"""

from __future__ import annotations

import functools
import json
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from urllib.parse import parse_qsl, urlsplit

from council.domain.key_variables import key_variables
from council.domain.redaction import MIN_SECRET, Redactor
from council.domain.secrets import is_secret_name
from council.errors import BadInput
from council.settings import snapshot

STATE_FILE = "stack.json"
PROFILES_FILE = "profiles.toml"
TOKENS = ("COUNCIL_API_TOKEN", "COUNCIL_API_READ_TOKEN")
URLS = (
    "COUNCIL_DATABASE_URL",
    "COUNCIL_MIGRATE_DATABASE_URL",
    "COUNCIL_DASHBOARD_DATABASE_URL",
    "COUNCIL_BROKER_URL",
)


def _url_secrets(value: str) -> Iterator[str]:
    """A URL's password and secret-named query values (``?password=…``)."""
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


def _profile_tables(env: Mapping[str, str]) -> Mapping[str, Mapping[str, object]]:
    """The profiles file's tables, as far as they can be read (a broken file names no
    variable here; loading the profiles says what is wrong with it)."""
    from council.config import council_home

    path = env.get("COUNCIL_PROFILES") or str(council_home() / PROFILES_FILE)
    try:
        with open(path, "rb") as file:
            tables = tomllib.load(file).get("profiles", {})
    except (OSError, ValueError):
        return {}
    if not isinstance(tables, dict):
        return {}
    return {name: table for name, table in tables.items() if isinstance(table, dict)}


def known_secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every known secret's value, with what it is (a variable's name, or which password)."""
    env = snapshot() if environ is None else environ
    found: dict[str, str] = {}
    for name in sorted(key_variables(_profile_tables(env), env)) + list(TOKENS):
        value = env.get(name, "").strip()
        if value:
            found.setdefault(value, name)
    for name in URLS:
        for password in _url_secrets(env.get(name, "")):
            found.setdefault(password, f"the password in {name}")
    for value in _state_values():
        for password in _url_secrets(value):
            found.setdefault(password, f"a password of the embedded stack ({STATE_FILE})")
    return {value: name for value, name in found.items() if len(value) >= MIN_SECRET}


@functools.lru_cache(maxsize=16)
def _redactor(secrets: frozenset[tuple[str, str]]) -> Redactor:
    return Redactor(dict(secrets))


def redactor(extra: Iterable[str] = ()) -> Redactor:
    """A redactor of every known secret (read now: the environment may have changed) and ``extra``."""
    named = {value: "a secret of this attempt" for value in extra if value}
    named.update(known_secrets())
    return _redactor(frozenset(named.items()))


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every known secret (and ``extra``), in any encoding or decoding, as ``***``:
    for what a model or agent returns, before anything is taken from it."""
    return redactor(extra).redact(text)


@functools.cache
def process_redactor() -> Redactor:
    """The redactor of the secrets this process knew when it first wrote (the ledger's:
    a changed environment is picked up by a restart, as `council restart` does)."""
    return redactor()


def refuse_known_secret(text: str, what: str) -> None:
    """BadInput naming the secret when ``text`` holds a known one (as written or as a
    reader decodes it): evidence and nodes are addressed by their content, which is
    never altered — a person is told, and nothing is written."""
    found = process_redactor().found(text)
    if found is not None:
        raise BadInput(f"{what} holds a known secret ({found}): remove it; nothing was written")


def refuse_in_parameters(parameters: object) -> None:
    """The one check of every write (``council.ledger.pg``): BadInput when any text a
    statement binds (JSON included) holds a known secret. What a model or agent returns
    was redacted where it arrived; what a person typed is refused, never rewritten."""
    redactor = process_redactor()
    if redactor:
        for text in _texts(parameters):
            found = redactor.found(text)
            if found is not None:
                raise BadInput(
                    f"refused: the text to be stored holds a known secret ({found}); nothing was written"
                )


def _texts(parameters: object) -> Iterator[str]:
    if isinstance(parameters, str):
        yield parameters
    elif isinstance(parameters, Mapping):
        for value in parameters.values():
            yield from _texts(value)
    elif isinstance(parameters, list | tuple):
        for value in parameters:
            yield from _texts(value)
    elif hasattr(parameters, "obj") and hasattr(parameters, "dumps"):  # psycopg's Json / Jsonb
        yield from _texts(parameters.obj)
