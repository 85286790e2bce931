"""Where a piece of evidence came from, as read before any transaction opens
(``council.adapters.sources`` reads files and URLs into it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from council.domain import validate as v
from council.errors import BadInput


@dataclass(frozen=True)
class Source:
    kind: str  # text | file | url
    content: str | None
    uri: str | None
    media_type: str
    fetched_at: datetime | None
    suggested_title: str


def from_text(text: str) -> Source:
    return Source("text", text, None, "text/plain", None, first_line(text))


def first_line(text: str) -> str:
    """The default title: the text's first line, cut at 80 characters."""
    line = text.strip().splitlines()[0] if text.strip() else "untitled"
    return line[:80]


def checked_size(source: Source) -> int:
    """Evidence is stored byte for byte (it is content-addressed), so it is
    checked, never trimmed."""
    if source.content is None:
        return 0
    if not source.content.strip():
        raise BadInput("evidence content must not be empty")
    if "\x00" in source.content:
        raise BadInput("evidence content contains a NUL character")
    size = len(source.content.encode("utf-8"))
    if size > v.MAX_EVIDENCE_BYTES:
        raise BadInput(f"evidence is too large: {size} bytes (limit {v.MAX_EVIDENCE_BYTES})")
    return size
