"""A thread's review setting and its history (migrations 0011, 0021; docs/architecture.md §5),
and what decides who reviews its proposals: the profiles that worked it.

A setting is an appended row; the latest is in force, and a thread without
one reviews automatically, by the profiles that worked it
(``council.domain.review.DEFAULT``). A proposal found to have no reviewer is
told by a ``retraction.review_unstaffed`` event naming the setting it was
found under.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, TypedDict
from uuid import UUID

from council.domain import validate as v
from council.domain.results.threads import ReviewSetting, ReviewSettings
from council.domain.review import DEFAULT, Review
from council.domain.reviewers import Reviewers
from council.ledger.events import append
from council.ledger.locks import lock_proposal
from council.ledger.pg import column, fetch, fetch_one

if TYPE_CHECKING:  # events.append takes it until the events store runs named SQL
    from council.ledger.pg import Connection


class SettingRow(TypedDict):
    """A row of ``thread_review_settings`` (council/sql/review_settings.sql)."""

    id: UUID
    thread_id: UUID
    review: str
    delay_s: int
    agents: list[str] | None
    reason: str
    actor: str
    created_at: datetime


@dataclass(frozen=True)
class _WorkedBy:
    profiles: list[str]
    real: bool


UNSTAFFED = "retraction.review_unstaffed"
UNFUNDED = "retraction.review_unfunded"


@dataclass(frozen=True)
class _Unfunded:
    budget_id: UUID | None
    told: bool


@dataclass(frozen=True)
class InForce:
    """The setting in force and its row's id (None: the default, never set)."""

    review: Review
    setting_id: UUID | None


@dataclass(frozen=True)
class WorkedBy:
    """The profiles pinned on the thread's runs that answered outside review (first
    run first), and whether any run of it that answered outside review was real."""

    profiles: tuple[str, ...]
    real: bool


def _review(row: SettingRow) -> Review:
    agents = row["agents"]
    return Review(row["review"], int(row["delay_s"]), tuple(agents) if agents is not None else None)


def shown(row: SettingRow | None) -> ReviewSetting:
    if row is None:
        return ReviewSetting(review=DEFAULT.review, delay_s=DEFAULT.delay_s, description=DEFAULT.describe())
    review = _review(row)
    return ReviewSetting(
        review=review.review,
        delay_s=review.delay_s,
        agents=list(review.agents) if review.agents is not None else None,
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
        [row] = fetch(
            self._conn,
            "add_review_setting",
            SettingRow,
            thread_id=thread_id,
            review=review.review,
            delay_s=review.delay_s,
            agents=list(review.agents) if review.agents is not None else None,
            reason=reason,
            actor=actor,
        )
        if event:
            append(
                self._conn,
                "thread.review_set",
                actor=actor,
                thread_id=thread_id,
                subject_id=thread_id,
                payload={
                    "review": review.review,
                    "delay_s": review.delay_s,
                    "agents": list(review.agents) if review.agents is not None else None,
                    "reason": reason,
                },
            )
        return shown(row)

    def current(self, thread_id: UUID) -> Review:
        return self.in_force(thread_id).review

    def in_force(self, thread_id: UUID) -> InForce:
        row = self._latest(thread_id)
        return InForce(DEFAULT, None) if row is None else InForce(_review(row), row["id"])

    def worked_by(self, thread_id: UUID) -> WorkedBy:
        [row] = fetch(self._conn, "thread_profiles", _WorkedBy, thread_id=thread_id)
        return WorkedBy(tuple(row.profiles), bool(row.real))

    def record_unstaffed(
        self, proposal_id: UUID, thread_id: UUID, setting_id: UUID | None, reviewers: Reviewers, *, actor: str
    ) -> bool:
        """Tell that the proposal has no reviewer under this setting and stays for a
        manual review, once (under the proposal's lock; nothing when a review
        dispatch or the same finding exists already). Whether it was recorded now."""
        lock_proposal(self._conn, proposal_id)
        dispatched = column(self._conn, "proposal_dispatched", UUID, proposal_id=proposal_id)
        [told] = column(
            self._conn,
            "review_unstaffed_under",
            bool,
            proposal_id=str(proposal_id),
            setting_id=str(setting_id) if setting_id else None,
        )
        if dispatched or told:
            return False
        append(
            self._conn,
            UNSTAFFED,
            actor=actor,
            thread_id=thread_id,
            subject_id=proposal_id,
            payload={
                "setting_id": str(setting_id) if setting_id else None,
                "reviewers": reviewers.document(),
                "reason": reviewers.reason,
            },
        )
        return True

    def record_unfunded(self, proposal_id: UUID, thread_id: UUID, reason: str, *, actor: str) -> bool:
        """Tell that the thread's budget refused the proposal's review, which stays for a
        manual review until the budget changes, once per budget row (under the proposal's
        lock; nothing when a review dispatch or the same finding exists already). Whether it
        was recorded now."""
        lock_proposal(self._conn, proposal_id)
        dispatched = column(self._conn, "proposal_dispatched", UUID, proposal_id=proposal_id)
        [found] = fetch(
            self._conn, "review_unfunded_under", _Unfunded, thread_id=thread_id, proposal_id=str(proposal_id)
        )
        if dispatched or found.told:
            return False
        append(
            self._conn,
            UNFUNDED,
            actor=actor,
            thread_id=thread_id,
            subject_id=proposal_id,
            payload={"budget_id": str(found.budget_id) if found.budget_id else None, "reason": reason},
        )
        return True

    def settings(self, thread_id: UUID) -> ReviewSettings:
        history = [shown(r) for r in fetch(self._conn, "review_settings", SettingRow, thread_id=thread_id)]
        return ReviewSettings(
            thread_id=thread_id, current=history[-1] if history else shown(None), history=history
        )

    def _latest(self, thread_id: UUID) -> SettingRow | None:
        return fetch_one(self._conn, "review_setting_in_force", SettingRow, thread_id=thread_id)
