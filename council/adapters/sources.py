"""Reading evidence content from a file or a URL, with size caps and deadlines.

Network and file I/O happen here, before any transaction opens; the evidence
service only ever sees the bytes that were read. Credentials in a URL
(``http://user:secret@host/``) are used for the fetch but never kept: the
source, the title and every message name the URL without them.
"""

from __future__ import annotations

import codecs
import ipaddress
import math
import re
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from council.domain.source import Source
from council.domain.validate import MAX_EVIDENCE_BYTES
from council.errors import BadInput, FetchError, UnreadableFetch
from council.files import read_regular
from council.settings import settings

FETCH_TIMEOUT_S = 15.0
FETCH_TIMEOUT_ENV = "COUNCIL_FETCH_TIMEOUT_S"


def from_file(path_text: str) -> Source:
    """A regular UTF-8 file of at most the evidence cap (``council.files.read_regular``)."""
    path = Path(path_text).expanduser()
    data = read_regular(path_text, "file", MAX_EVIDENCE_BYTES)
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"cannot read the file {path_text}: not UTF-8 text") from None
    return Source("file", content, str(path.resolve()), _media_type(path.suffix), None, path.name)


def check_url(url: str) -> str:
    """The URL, stripped, if it is a well-formed http(s) URL with a host; else BadInput."""
    import httpx

    url = url.strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number in range
        host = httpx.URL(url).host  # IDNA-encoded; an IPv6 address without brackets
    except (ValueError, httpx.InvalidURL) as exc:
        raise BadInput(f"not a valid URL: {without_credentials(url)!r} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadInput(f"not an http(s) URL: {without_credentials(url)!r}")
    if not (_HOSTNAME.fullmatch(host) or _is_address(host)):
        raise BadInput(f"not a valid host name in URL: {without_credentials(url)!r}")
    return url


def without_credentials(url: str) -> str:
    """The URL without the user and password of its authority (if any)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return _CREDENTIALS.sub("//", url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def fetch_timeout(given: float | None) -> float:
    """The fetch's total deadline: ``given`` (--timeout), else COUNCIL_FETCH_TIMEOUT_S, else 15 s."""
    if given is not None:
        if not math.isfinite(given) or given <= 0:
            raise BadInput(f"--timeout must be a positive number of seconds, got {given}")
        return given
    return settings().fetch_timeout_s  # COUNCIL_FETCH_TIMEOUT_S, checked when the settings were read


def reference_only(url: str) -> Source:
    shown = without_credentials(check_url(url))
    return Source("url", None, shown, "text/uri-list", None, shown)


def from_url(url: str, *, timeout_s: float = FETCH_TIMEOUT_S, allow_private: bool = False) -> Source:
    """Fetch a URL's text within a total deadline and a size cap (council.adapters.url_fetch)."""
    import httpx

    from council.adapters import url_fetch

    url = check_url(url)
    shown = without_credentials(url)
    try:
        fetched = url_fetch.fetch(
            url, timeout_s=timeout_s, allow_private=allow_private, max_bytes=MAX_EVIDENCE_BYTES
        )
    except httpx.HTTPStatusError as exc:
        raise FetchError(f"fetching {shown} failed: HTTP {exc.response.status_code}") from None
    except httpx.DecodingError as exc:  # a content coding not undone (url_fetch)
        raise UnreadableFetch(f"fetching {shown} failed: {exc}") from None
    except httpx.TimeoutException:
        raise FetchError(f"fetching {shown} failed: no complete answer within {timeout_s:g} s") from None
    except (httpx.HTTPError, url_fetch.TooLarge) as exc:
        reason = _CREDENTIALS.sub("//", str(exc))
        raise FetchError(f"fetching {shown} failed: {type(exc).__name__}: {reason}") from None
    content = _text(fetched.body, fetched.encoding, shown)
    return Source("url", content, shown, fetched.media_type, datetime.now(UTC), shown)


def _text(body: bytes, charset: str, shown: str) -> str:
    """The body as text, in one of the charsets text is sent in: another charset (UTF-7
    turns bytes into lone surrogates, ``rot13`` is no text encoding) is refused."""
    try:
        codec = codecs.lookup(charset).name
    except LookupError:
        codec = ""
    if codec not in TEXT_CHARSETS:
        raise UnreadableFetch(
            f"fetching {shown} failed: charset {charset[:40]!r} is not supported "
            f"(UTF-8, UTF-16, ASCII, ISO-8859-1/15 and Windows-1252 are)"
        )
    try:
        return body.decode(codec)
    except UnicodeDecodeError:
        raise UnreadableFetch(f"fetching {shown} failed: the body is not {codec} text") from None


# Python's names (codecs.lookup) of the charsets a text body is decoded from.
TEXT_CHARSETS = frozenset(
    {"utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "ascii", "iso8859-1", "iso8859-15", "cp1252"}
)
# The userinfo of any URL inside a message (a redirect's, say).
_CREDENTIALS = re.compile(r"//[^/@\s]*@")
_HOSTNAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?", re.IGNORECASE)


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _media_type(suffix: str) -> str:
    return {".md": "text/markdown", ".json": "application/json", ".html": "text/html"}.get(
        suffix.lower(), "text/plain"
    )
