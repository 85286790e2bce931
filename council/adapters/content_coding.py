"""Undoing a response's ``Content-Encoding`` within a byte budget, as the body streams
(docs/architecture.md §11).

A decoder that inflates a whole chunk at once lets a few kilobytes become
gigabytes before anything is counted: a 4 KB body gzipped twice expands a
million-fold in one call. Here every layer inflates at most ``STEP`` bytes per
call (zlib's ``max_length``) and hands them on at once, so what is held at any
moment is the budget plus a few steps, however the layers nest; the caller
counts the decoded bytes and stops as soon as they pass its cap.

Only gzip and deflate are undone (at most ``MAX_LAYERS`` of them): the fetch
asks for ``identity``, so any coding is the server's own idea, and one that is
not understood is refused rather than stored as if it were text.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from typing import Protocol

STEP = 64 * 1024
MAX_LAYERS = 3
_GZIP = zlib.MAX_WBITS | 16
_ZLIB = zlib.MAX_WBITS
_RAW = -zlib.MAX_WBITS


class UnsupportedCoding(Exception):
    """The response names a content coding that is not undone here, or too many layers."""


class _Layer(Protocol):
    def feed(self, data: bytes) -> Iterator[bytes]: ...

    def finish(self) -> Iterator[bytes]: ...


def decoded(raw: Iterable[bytes], content_encoding: str | None) -> Iterator[bytes]:
    """The body of ``raw`` (the bytes as sent) with its codings undone, in pieces of at most
    ``STEP`` bytes, each produced only when the previous one has been taken."""
    layers = _layers(content_encoding)
    for chunk in raw:
        yield from _through(layers, chunk)
    yield from _finished(layers)


def _layers(content_encoding: str | None) -> list[_Layer]:
    codings = [c.strip().lower() for c in (content_encoding or "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if len(codings) > MAX_LAYERS:
        raise UnsupportedCoding(f"{len(codings)} content codings (at most {MAX_LAYERS} are undone)")
    layers: list[_Layer] = []
    for coding in reversed(codings):  # the last coding applied is the first undone
        if coding in ("gzip", "x-gzip"):
            layers.append(_Inflate(_GZIP))
        elif coding == "deflate":
            layers.append(_Inflate(_ZLIB, fallback=_RAW))
        else:
            raise UnsupportedCoding(f"content coding {coding!r} is not supported (gzip and deflate are)")
    return layers


def _through(layers: list[_Layer], chunk: bytes) -> Iterator[bytes]:
    if not layers:
        if chunk:
            yield chunk
        return
    first, rest = layers[0], layers[1:]
    for piece in first.feed(chunk):
        yield from _through(rest, piece)


def _finished(layers: list[_Layer]) -> Iterator[bytes]:
    for index, layer in enumerate(layers):
        for piece in layer.finish():
            yield from _through(layers[index + 1 :], piece)


class _Inflate:
    """One zlib stream, inflated ``STEP`` bytes at a time. Whatever follows the end of
    the stream (a second gzip member, trailing bytes) is ignored, as httpx ignores it."""

    def __init__(self, wbits: int, fallback: int | None = None) -> None:
        self._inflater = zlib.decompressobj(wbits)
        self._fallback = fallback
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        while data and not self._inflater.eof:
            try:
                piece = self._inflater.decompress(data, STEP)
            except zlib.error as exc:
                if self._started or self._fallback is None:
                    raise UnsupportedCoding(f"the body is not valid compressed data ({exc})") from None
                # "deflate" is often sent raw, without zlib's header: try that once.
                self._inflater = zlib.decompressobj(self._fallback)
                self._fallback = None
                continue
            self._started = True
            data = self._inflater.unconsumed_tail
            if piece:
                yield piece
        yield from self._drain()

    def finish(self) -> Iterator[bytes]:
        yield from self._drain()

    def _drain(self) -> Iterator[bytes]:
        # Output zlib holds back once max_length was reached with the input all taken.
        while not self._inflater.eof:
            piece = self._inflater.decompress(b"", STEP)
            if not piece:
                return
            yield piece
