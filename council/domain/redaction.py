"""Known secrets found in text as a reader would read it (docs/architecture.md §11).

A model or agent CLI that saw a key, a token or a password (it echoes its own key, or
read a file it should not have) must not get it into an immutable row; a person who
pastes one into evidence or a node must be told, not have the text silently altered.
A :class:`Redactor` knows the secrets (and what each is: ``OPENAI_API_KEY``, "the
database password") and finds each

- as written, and in the encodings a secret is carried in: base64 (standard and
  URL-safe, also inside a longer base64 text, at each of the three byte alignments),
  hex (either case) and URL-encoded;
- in what a reader decodes the text to: JSON string escapes (``\\u0073``, ``\\/``, a
  surrogate pair), HTML character references (``&#115;``, ``&#x73;``, the five named
  ones) and percent-escapes of ASCII, however they are mixed with plain characters and
  nested up to three deep (``\\u0026#115;`` is ``&#115;`` is ``s``).

:meth:`Redactor.redact` replaces each occurrence with ``***`` — in the original text,
over the span the decoded match came from, so a JSON document stays a JSON document —
for what a model returns; :meth:`Redactor.found` names the first secret a text holds,
for a write that refuses it. Nothing else is touched: text that holds no known secret
comes back as it went in.

Pure: which secrets are known is the caller's business (``council.known_secrets``).
"""

from __future__ import annotations

import base64
import bisect
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, quote_plus

REDACTED = "***"
MIN_SECRET = 8  # shorter values are too likely to be ordinary words or numbers
_MIN_CORE = 8  # the shortest encoded run kept as a pattern
_DEPTH = 3  # decodings applied one over another
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_JSON_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# What a reader decodes: a JSON surrogate pair, a JSON \\u escape or short escape, an HTML
# numeric (hex or decimal, ';' optional as browsers read it) or named reference, an ASCII
# percent-escape.
_ESCAPE = re.compile(
    r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})"
    r"|\\u([0-9a-fA-F]{4})"
    r'|\\(["\\/bfnrt])'
    r"|&#[xX]([0-9a-fA-F]{1,6});?"
    r"|&#([0-9]{1,7});?"
    r"|&(amp|lt|gt|quot|apos);"
    r"|%([0-7][0-9a-fA-F])"
)
_MAY_ESCAPE = re.compile(r"[\\&%]")
_ESCAPE_PARTS = frozenset("\\&#;%uxX0123456789abcdefABCDEF" + "".join(_NAMED))


def _base64_cores(secret: bytes) -> set[str]:
    """The part of any base64 text encoding ``secret`` that depends on its bytes alone,
    for each alignment of the secret in the encoded bytes (0, 1 or 2 bytes before it)."""
    cores: set[str] = set()
    for before in range(3):
        encoded = base64.b64encode(b"\0" * before + secret + b"\0\0").decode("ascii")
        first = -(-8 * before // 6)  # the first sextet that starts inside the secret
        last = 8 * (before + len(secret)) // 6  # the sextets that end inside it
        core = encoded[first:last]
        if len(core) >= _MIN_CORE:
            cores.add(core)
            cores.add(core.replace("+", "-").replace("/", "_"))
    return cores


def variants(secret: str) -> set[str]:
    """``secret`` as written and in every encoding it is looked for."""
    raw = secret.encode("utf-8")
    found = {secret, raw.hex(), raw.hex().upper(), quote(secret, safe=""), quote_plus(secret)}
    for whole in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):  # alone: the padded tail too
        found |= {whole.decode("ascii"), whole.decode("ascii").rstrip("=")}
    found |= _base64_cores(raw)
    return {v for v in found if len(v) >= _MIN_CORE}


def _char(match: re.Match[str]) -> str | None:
    high, low, code, simple, hexa, decimal, named, percent = match.groups()
    try:
        if high is not None:
            return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00))
        if code is not None:
            return chr(int(code, 16))
        if simple is not None:
            return _JSON_SIMPLE[simple]
        if hexa is not None or decimal is not None:
            return chr(int(hexa, 16) if hexa is not None else int(decimal))
        if named is not None:
            return _NAMED[named]
        return chr(int(percent, 16))
    except (ValueError, OverflowError):  # a reference beyond Unicode: a reader shows it as written
        return None


class _View:
    """A decoding of a text, with the way back: where in the text each decoded character
    came from. Marks are the decoded characters that were an escape. Only escapes of a
    character some secret's form holds (``alphabet``) are decoded: a ``\\n`` or a
    ``\\u00e4`` can be no part of a match, and a JSON text full of them costs one scan."""

    def __init__(self, text: str, alphabet: frozenset[str], parent: _View | None = None) -> None:
        self.parent = parent
        out: list[str] = []
        self._at: list[int] = []  # decoded index of each escape's character
        self._span: list[tuple[int, int]] = []  # the escape's span in the text decoded
        last = shift = 0
        for match in _ESCAPE.finditer(text):
            char = _char(match)
            if char is None or char not in alphabet:
                continue
            out += [text[last : match.start()], char]
            shift += match.start() - last
            self._at.append(shift)
            self._span.append(match.span())
            shift += 1
            last = match.end()
        out.append(text[last:])
        self.text = "".join(out)
        self.changed = bool(self._at)

    def _local(self, index: int) -> tuple[int, int]:
        """The span, in the text this view decoded, of its character at ``index``."""
        k = bisect.bisect_right(self._at, index) - 1
        if k >= 0 and self._at[k] == index:
            return self._span[k]
        before = self._span[k][1] + (index - self._at[k] - 1) if k >= 0 else index
        return before, before + 1

    def origin(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that decodes to ``[start, end)`` of this view."""
        first, last = self._local(start)[0], self._local(end - 1)[1]
        return self.parent.origin(first, last) if self.parent is not None else (first, last)


class Redactor:
    """Finds every known secret, in every encoding and decoding, and replaces it with ``***``."""

    def __init__(self, secrets: Iterable[str] | Mapping[str, str]) -> None:
        named = dict(secrets) if isinstance(secrets, Mapping) else {s: "a known secret" for s in secrets}
        self._names: dict[str, str] = {}
        for secret, name in sorted(named.items()):
            if len(secret) >= MIN_SECRET:
                for variant in variants(secret):
                    self._names.setdefault(variant, name)
        # what a decoding may need to produce: a secret's forms, and what makes up an escape
        # itself (a reference nested in a JSON escape: \\u0026#115;)
        self._alphabet = frozenset("".join(self._names)) | _ESCAPE_PARTS
        # longest first, so a secret's encoding is never half-replaced by a shorter match
        ordered = sorted(self._names, key=lambda v: (-len(v), v))
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._shortest = len(ordered[-1]) if ordered else 0

    def __bool__(self) -> bool:
        return self._pattern is not None

    def _views(self, text: str) -> list[_View]:
        """The text decoded once, twice, three times (while a decoding changes it)."""
        views: list[_View] = []
        if not _MAY_ESCAPE.search(text):
            return views
        current = _View(text, self._alphabet)
        while current.changed and len(views) < _DEPTH:
            views.append(current)
            current = _View(current.text, self._alphabet, current)
        return views

    def _spans(self, text: str) -> list[tuple[int, int, str]]:
        assert self._pattern is not None
        found = [(m.start(), m.end(), m.group()) for m in self._pattern.finditer(text)]
        for view in self._views(text):
            for match in self._pattern.finditer(view.text):
                found.append((*view.origin(match.start(), match.end()), match.group()))
        return found

    def found(self, text: str) -> str | None:
        """What the first known secret ``text`` holds is (``OPENAI_API_KEY``, "the database
        password"), or None: the text holds none, as written or as a reader decodes it."""
        if self._pattern is None or len(text) < self._shortest:
            return None
        spans = self._spans(text)
        return self._names[min(spans)[2]] if spans else None

    def redact(self, text: str) -> str:
        """``text`` with each known secret's span replaced by ``***`` (the text itself when
        it holds none)."""
        if self._pattern is None or len(text) < self._shortest:  # most bound values: ids, states
            return text
        spans = sorted(self._spans(text))
        if not spans:
            return text
        merged: list[list[int]] = []
        for start, end, _ in spans:
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        out, last = [], 0
        for start, end in merged:
            out += [text[last:start], REDACTED]
            last = end
        out.append(text[last:])
        return "".join(out)
