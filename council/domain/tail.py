"""Where a live reader of the event log stands (docs/architecture.md §8).

Event ids are drawn at insert and transactions commit in another order, so "the
events after the last id seen" would skip an event drawn before, but committed
after, one already read. A live reader instead takes only *settled* events —
of a transaction older than every one still in flight — in (tx, id) order, and
stands at the last position it took: nothing can later land before it.
Public ids stay event ids; the ledger turns one back into its position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from council.domain.results.events import Event


@dataclass(frozen=True)
class TailCursor:
    """After (tx, event_id) in the settled order; ``skip``: the events a reader
    that started from now found already committed but not yet settled (never sent)."""

    tx: int
    event_id: int
    skip: frozenset[int] = field(default_factory=frozenset)

    def past(self, tx: int, event_id: int) -> TailCursor:
        return TailCursor(tx, event_id, self.skip - {event_id})


@dataclass(frozen=True)
class TailPage:
    """The events to send, in order, and the cursor after them (past the skipped ones too)."""

    events: list[Event]
    cursor: TailCursor
    full: bool  # the page hit its limit: read again before waiting


@dataclass(frozen=True)
class Settled:
    """A poll of the whole log: the threads with events settled below ``horizon``
    since the previous poll's horizon."""

    horizon: int
    thread_ids: frozenset[UUID]
