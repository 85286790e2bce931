"""Known secrets taken out of text before it is stored (docs/architecture.md §11).

A model or agent CLI that saw a key, a token or a password (it echoes its own
key, or read a file it should not have) must not get it into an immutable row.
Every text that comes back from one is passed through a :class:`Redactor` built
from the secrets this process knows, before anything is written. A secret is
found as written and in its common encodings: base64 (standard and URL-safe,
also inside a longer base64 text, at each of the three byte alignments), hex
(either case) and URL-encoded.

Pure: which secrets are known is the caller's business (``council.secrets_known``).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

REDACTED = "***"
MIN_SECRET = 8  # shorter values are too likely to be ordinary words or numbers
_MIN_CORE = 8  # the shortest encoded run kept as a pattern


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


class Redactor:
    """Replaces every known secret, in every encoding, with ``***``."""

    def __init__(self, secrets: Iterable[str]) -> None:
        patterns = {v for s in secrets if len(s) >= MIN_SECRET for v in variants(s)}
        # longest first, so a secret's encoding is never half-replaced by a shorter match
        ordered = sorted(patterns, key=lambda v: (-len(v), v))
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._shortest = len(ordered[-1]) if ordered else 0

    def __bool__(self) -> bool:
        return self._pattern is not None

    def redact(self, text: str) -> str:
        if self._pattern is None or len(text) < self._shortest:  # most bound values: ids, states
            return text
        return self._pattern.sub(REDACTED, text)
