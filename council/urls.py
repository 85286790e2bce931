"""Postgres URLs: libpq's form, a configured one checked, a password hidden, another role's.

Read by the settings (a configured URL is checked when they are read) and by the
configuration; imports nothing of Council but its errors.
"""

from __future__ import annotations

from council.errors import ConfigError


def libpq_url(url: str) -> str:
    """A Postgres URL in libpq's ``postgresql://`` form (``postgres://`` and SQLAlchemy's
    ``postgresql+psycopg://`` read as the same); anything else is refused."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix) :]
    scheme = url.split("://", 1)[0] if "://" in url else ""
    shown = f" (scheme {scheme[:20]!r})" if scheme and "@" not in scheme else ""
    raise ConfigError(f"not a Postgres URL{shown}: it must start with postgresql://")


def split_hosts(url: str) -> tuple[str, list[str], str]:
    """A Postgres URL after its scheme as (user information with its ``@`` or "", the
    ``host[:port]`` entries of its host list, the rest: ``/database?query``). libpq's
    multi-host form, ``postgresql://u@h1:5432,h2:5432/db?target_session_attrs=read-write``
    (docs/operations/replication.md), has two or more entries."""
    rest = libpq_url(url).removeprefix("postgresql://")
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    netloc, tail = rest[:cut], rest[cut:]
    userinfo, _, hosts = netloc.rpartition("@")
    return (userinfo + "@" if userinfo or "@" in netloc else ""), hosts.split(","), tail


def checked_database_url(variable: str, url: str) -> str:
    """A database URL from ``variable``, refused when libpq cannot read it or its port is
    not one; the reason never repeats the URL (it may hold a password)."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(libpq_url(url))
    except ConfigError:
        raise ConfigError(f"{variable} is not a Postgres URL: it must start with postgresql://") from None
    except ProgrammingError as exc:
        reason = str(exc).split(" in URI:", 1)[0].split(': "', 1)[0].strip()
        raise ConfigError(f"{variable} is malformed: {redact_url(reason)}") from None
    ports = [p for p in str(parts.get("port") or "").split(",") if p]
    if any(not port.isdigit() or not 0 < int(port) < 65536 for port in ports):
        raise ConfigError(f"{variable} is malformed: its port is not a number from 1 to 65535")
    return url


def redact_url(url: str) -> str:
    """Hide a password in a URL before it reaches logs or output."""
    if "://" not in url or "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    if ":" in creds:
        creds = creds.split(":", 1)[0] + ":***"
    return f"{scheme}://{creds}@{host}"


def with_role(url: str, role: str) -> str:
    """The same Postgres URL as ``role`` with no password at all: neither in its user
    information nor as a ``password`` (or ``passfile``) query parameter."""
    from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    hosts = parts.netloc.rsplit("@", 1)[-1]
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if k.lower() not in ("password", "passfile")
    ]
    netloc = f"{quote(role, safe='')}@{hosts}"
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query), parts.fragment))


def url_role(url: str) -> str | None:
    """The role (user name) a Postgres URL names, if it names one."""
    from urllib.parse import unquote, urlsplit

    netloc = urlsplit(url).netloc
    if "@" not in netloc:
        return None
    return unquote(netloc.rsplit("@", 1)[0].split(":", 1)[0]) or None
