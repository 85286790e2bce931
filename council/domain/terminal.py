"""Stored text made safe to show in a terminal (docs/architecture.md §11: stored text
is data wherever it is shown). Every human view of the CLI (and the demo) passes
what it did not write itself through :func:`inert`; text printed without markup
goes through :func:`without_controls`.
"""

from __future__ import annotations

import re

# Terminal control in stored text (docs/architecture.md §11: stored text is data
# wherever it is shown): whole escape sequences first (CSI, OSC such as an OSC-8
# hyperlink, DCS/SOS/PM/APC strings, in their 7-bit and C1 forms), then every
# other C0/C1 control but newline and tab, and the bidirectional overrides.
_SEQUENCES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"  # CSI
    r"|(?:\x1b[\]P^_X]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC, DCS, SOS, PM, APC
    r"|\x1b[ -/]*[0-~]?"  # any other escape
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def without_controls(text: str) -> str:
    """``text`` with terminal escape sequences and control characters removed
    (newline and tab kept)."""
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))


def inert(value: object) -> str:
    """Stored text made safe to interpolate into a Rich markup string or a table
    cell: control and escape sequences removed, markup escaped. Every human view
    passes what it did not write itself through here."""
    from rich.markup import escape

    return escape(without_controls("" if value is None else str(value)))
