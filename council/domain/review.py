"""A thread's review setting (docs/architecture.md §5): how an opened retraction
proposal is reviewed — automatically, after a delay, or only by hand.

    auto      a review dispatch at once; its last run adjudicates
    DELAY     the same, once the proposal has been open that long (``90s``, ``10m``, ``2h``)
    manual    no review dispatch and no automatic adjudication: people vote and adjudicate

Beside it, who reviews: ``agents``, the profiles a review is dispatched to, or
None — the profiles that worked the thread (``council.domain.reviewers``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from council.domain.validate import MAX_NAME
from council.errors import BadInput

AUTO, MANUAL, DELAYED = "auto", "manual", "delayed"
MAX_DELAY_S = 30 * 24 * 3600
_DELAY = re.compile(r"^(\d+)\s*([smhd]?)$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
THREAD_AGENTS = "thread"  # `--agents thread`: back to the profiles that worked the thread
MAX_REVIEWERS = 16  # as the column's check (migration 0021)


@dataclass(frozen=True)
class Review:
    review: str
    delay_s: int = 0
    agents: tuple[str, ...] | None = None  # the reviewers; None: the profiles that worked the thread

    @property
    def automatic(self) -> bool:
        """Whether a review is dispatched, and adjudicates, without a person."""
        return self.review != MANUAL

    def describe(self) -> str:
        if self.review == MANUAL:
            return "manual review (people vote and adjudicate)"
        when = "automatic review"
        if self.review == DELAYED:
            when += f" after {format_delay(self.delay_s)}"
        return f"{when} by {describe_agents(self.agents)}"


def describe_agents(agents: tuple[str, ...] | None) -> str:
    return ", ".join(agents) if agents else "the profiles that worked the thread"


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


def parse_agents(text: str) -> tuple[str, ...] | None:
    """``a,b,c`` (agent profile names, each once), or ``thread`` for the profiles
    that worked the thread (None); bad input otherwise."""
    value = text.strip()
    if value.lower() == THREAD_AGENTS:
        return None
    names = tuple(name.strip() for name in value.split(","))
    if not value or any(not name for name in names):
        raise BadInput(f"agents must be profile names separated by commas, or {THREAD_AGENTS}, not {text!r}")
    for name in names:
        if len(name) > MAX_NAME:
            raise BadInput(f"agent name {name[:20]!r}… is longer than {MAX_NAME} characters")
    if len(set(names)) != len(names):
        raise BadInput("each agent may be named once")
    if len(names) > MAX_REVIEWERS:
        raise BadInput(f"at most {MAX_REVIEWERS} reviewers")
    return names


def format_delay(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
