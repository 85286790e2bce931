"""Reading evidence content from a file or a URL, with size caps and timeouts.

Network and file I/O happen here, before any transaction opens; the evidence
service only ever sees the bytes that were read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse

from council.domain.validate import MAX_EVIDENCE_BYTES
from council.errors import BadInput, CouncilError

FETCH_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Source:
    kind: str  # text | file | url
    content: str | None
    uri: str | None
    media_type: str
    fetched_at: datetime | None
    suggested_title: str


class FetchError(CouncilError):
    """The URL could not be fetched (network, status, size or encoding)."""


def from_text(text: str) -> Source:
    return Source("text", text, None, "text/plain", None, _first_line(text))


def from_file(path_text: str) -> Source:
    path = Path(path_text).expanduser()
    if not path.is_file():
        raise BadInput(f"no such file: {path_text}")
    size = path.stat().st_size
    if size > MAX_EVIDENCE_BYTES:
        raise BadInput(f"file is too large: {size} bytes (limit {MAX_EVIDENCE_BYTES})")
    try:
        content = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"file is not UTF-8 text: {path_text}") from None
    return Source("file", content, str(path.resolve()), _media_type(path.suffix), None, path.name)


def check_url(url: str) -> str:
    parsed = urlparse(url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise BadInput(f"not an http(s) URL: {url!r}")
    return url.strip()


def reference_only(url: str) -> Source:
    url = check_url(url)
    return Source("url", None, url, "text/uri-list", None, url)


def from_url(url: str, *, timeout: float = FETCH_TIMEOUT_S) -> Source:
    """Fetch a URL's text with a timeout and a size cap (streamed, so a huge body
    is cut off rather than downloaded)."""
    import httpx

    url = check_url(url)
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=True) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code >= 400:
                raise FetchError(f"fetching {url} failed: HTTP {response.status_code}")
            chunks: list[bytes] = []
            total = 0
            for chunk in response.iter_bytes():
                total += len(chunk)
                if total > MAX_EVIDENCE_BYTES:
                    raise FetchError(f"fetching {url} failed: body exceeds {MAX_EVIDENCE_BYTES} bytes")
                chunks.append(chunk)
            media_type = response.headers.get("content-type", "text/plain").split(";")[0].strip()
            encoding = response.encoding or "utf-8"
    except httpx.HTTPError as exc:
        raise FetchError(f"fetching {url} failed: {type(exc).__name__}: {exc}") from exc
    try:
        content = b"".join(chunks).decode(encoding)
    except (UnicodeDecodeError, LookupError):
        raise FetchError(f"fetching {url} failed: the body is not text") from None
    return Source("url", content, url, media_type, datetime.now(UTC), url)


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "untitled"
    return line[:80]


def _media_type(suffix: str) -> str:
    return {".md": "text/markdown", ".json": "application/json", ".html": "text/html"}.get(
        suffix.lower(), "text/plain"
    )
