"""Where a piece of evidence came from, as read before any transaction opens
(``council.adapters.sources`` reads files and URLs into it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


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
