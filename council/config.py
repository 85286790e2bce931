"""Configuration: environment first, then the embedded stack's state file.

Variables (documented in the README):

- ``COUNCIL_DATABASE_URL`` — Postgres URL (``postgresql://…``) the application
  uses (as the role ``council_app``, migration 0007); when unset the embedded
  stack's URL from the state file is used.
- ``COUNCIL_MIGRATE_DATABASE_URL`` — the URL ``council db upgrade`` migrates
  with, as the owner of the tables; when unset, ``COUNCIL_DATABASE_URL``, then the
  embedded stack's owner URL.
- ``COUNCIL_BROKER_URL`` — Redis URL for Celery; same fallback.
- ``COUNCIL_HOME`` — where the embedded stack keeps its data and state file
  (default: the user's data directory, e.g. ``~/.local/share/council``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from council.errors import ConfigError

STATE_FILE_NAME = "stack.json"


def council_home() -> Path:
    explicit = os.environ.get("COUNCIL_HOME")
    if explicit:
        return Path(explicit).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_data_dir("council", appauthor=False))


def state_file() -> Path:
    return council_home() / STATE_FILE_NAME


def read_state() -> dict[str, Any] | None:
    path = state_file()
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"unreadable stack state file {path}: {exc}") from exc
    return data if isinstance(data, dict) else None


def write_state(data: dict[str, Any]) -> None:
    """Private (0600): it holds the embedded broker's password."""
    from council.stack_files import home_mode, private_dir, write_private

    path = state_file()
    private_dir(path.parent, home_mode())
    write_private(path, json.dumps(data, indent=2, sort_keys=True))


def clear_state() -> None:
    state_file().unlink(missing_ok=True)


def sqlalchemy_url(url: str) -> str:
    """Normalise a Postgres URL to SQLAlchemy's psycopg 3 dialect."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    raise ConfigError(f"not a Postgres URL: {redact_url(url)}")


def redact_url(url: str) -> str:
    """Hide a password in a URL before it reaches logs or output."""
    if "://" not in url or "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    if ":" in creds:
        creds = creds.split(":", 1)[0] + ":***"
    return f"{scheme}://{creds}@{host}"


def database_url(required: bool = True) -> str | None:
    url = os.environ.get("COUNCIL_DATABASE_URL")
    if url:
        return url
    state = read_state()
    if state and state.get("database_url"):
        return str(state["database_url"])
    if required:
        raise ConfigError("no database configured: set COUNCIL_DATABASE_URL or run `council up`")
    return None


def migrate_database_url(required: bool = True) -> str | None:
    """The owner's URL, for migrations: the environment's, else the embedded stack's."""
    url = os.environ.get("COUNCIL_MIGRATE_DATABASE_URL") or os.environ.get("COUNCIL_DATABASE_URL")
    if url:
        return url
    state = read_state() or {}
    # A state file of a release before the application role has only database_url.
    url = state.get("migrate_database_url") or state.get("database_url")
    if url:
        return str(url)
    if required:
        raise ConfigError(
            "no database configured: set COUNCIL_MIGRATE_DATABASE_URL or COUNCIL_DATABASE_URL, "
            "or run `council up`"
        )
    return None


def broker_url(required: bool = True) -> str | None:
    url = os.environ.get("COUNCIL_BROKER_URL")
    if url:
        return url
    state = read_state()
    if state and state.get("broker_url"):
        return str(state["broker_url"])
    if required:
        raise ConfigError("no broker configured: set COUNCIL_BROKER_URL or run `council up`")
    return None
