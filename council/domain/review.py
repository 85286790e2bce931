"""A thread's review setting (docs/architecture.md §5): how an opened retraction
proposal is reviewed — automatically, after a delay, or only by hand.

    auto      a review dispatch at once; its last run adjudicates
    DELAY     the same, once the proposal has been open that long (``90s``, ``10m``, ``2h``)
    manual    no review dispatch and no automatic adjudication: people vote and adjudicate
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from council.errors import BadInput

AUTO, MANUAL, DELAYED = "auto", "manual", "delayed"
MAX_DELAY_S = 30 * 24 * 3600
_DELAY = re.compile(r"^(\d+)\s*([smhd]?)$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Review:
    review: str
    delay_s: int = 0

    @property
    def automatic(self) -> bool:
        """Whether a review is dispatched, and adjudicates, without a person."""
        return self.review != MANUAL

    def describe(self) -> str:
        if self.review == DELAYED:
            return f"automatic review after {format_delay(self.delay_s)}"
        return "automatic review" if self.review == AUTO else "manual review (people vote and adjudicate)"


DEFAULT = Review(AUTO)


def parse_review(text: str) -> Review:
    """``auto``, ``manual`` or a delay (seconds, or with s, m, h, d); bad input otherwise."""
    value = text.strip().lower()
    if value in (AUTO, MANUAL):
        return Review(value)
    found = _DELAY.match(value)
    if found is None:
        raise BadInput(f"review must be auto, manual or a delay such as 90s, 10m or 2h, not {text!r}")
    seconds = int(found.group(1)) * _UNIT_S[found.group(2)]
    if seconds == 0:
        return Review(AUTO)
    if seconds > MAX_DELAY_S:
        raise BadInput(f"review delay {text!r} is longer than 30 days")
    return Review(DELAYED, seconds)


def format_delay(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
