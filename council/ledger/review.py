"""A thread's review setting and its history (migration 0011; docs/architecture.md §5).

A setting is an appended row; the latest is in force, and a thread without
one reviews automatically (``council.domain.review.DEFAULT``).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Connection, insert, select

from council.domain import validate as v
from council.domain.results.threads import ReviewSetting, ReviewSettings
from council.domain.review import DEFAULT, Review
from council.ledger import tables as t
from council.ledger.events import append

_S = t.thread_review_settings


def shown(row: Any | None) -> ReviewSetting:
    if row is None:
        return ReviewSetting(review=DEFAULT.review, delay_s=DEFAULT.delay_s, description=DEFAULT.describe())
    review = Review(row["review"], int(row["delay_s"]))
    return ReviewSetting(
        review=review.review,
        delay_s=review.delay_s,
        description=review.describe(),
        actor=row["actor"],
        reason=row["reason"],
        set_at=row["created_at"],
    )


class ReviewStore:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def set(
        self, thread_id: UUID, review: Review, *, actor: str, reason: str = "", event: bool = True
    ) -> ReviewSetting:
        """Append ``review`` as the thread's setting in force, with its event (a
        thread's first setting is told by its ``thread.created`` event instead)."""
        reason = v.text(reason, "reason", v.MAX_REASON, allow_empty=True)
        row = (
            self._conn.execute(
                insert(_S)
                .values(
                    thread_id=thread_id,
                    review=review.review,
                    delay_s=review.delay_s,
                    reason=reason,
                    actor=actor,
                )
                .returning(_S)
            )
            .mappings()
            .one()
        )
        if event:
            append(
                self._conn,
                "thread.review_set",
                actor=actor,
                thread_id=thread_id,
                subject_id=thread_id,
                payload={"review": review.review, "delay_s": review.delay_s, "reason": reason},
            )
        return shown(row)

    def current(self, thread_id: UUID) -> Review:
        row = self._latest(thread_id)
        return DEFAULT if row is None else Review(row["review"], int(row["delay_s"]))

    def settings(self, thread_id: UUID) -> ReviewSettings:
        rows = self._conn.execute(
            select(_S).where(_S.c.thread_id == thread_id).order_by(_S.c.created_at, _S.c.id)
        ).mappings()
        history = [shown(r) for r in rows]
        return ReviewSettings(
            thread_id=thread_id, current=history[-1] if history else shown(None), history=history
        )

    def _latest(self, thread_id: UUID) -> Any | None:
        return (
            self._conn.execute(
                select(_S)
                .where(_S.c.thread_id == thread_id)
                .order_by(_S.c.created_at.desc(), _S.c.id.desc())
                .limit(1)
            )
            .mappings()
            .first()
        )
