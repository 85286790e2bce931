"""Threads: a question, its objective, pinned rule versions and its main branch.
Named SQL: council/sql/thread_store.sql."""

from __future__ import annotations

from uuid import UUID

from council.domain import validate as v
from council.domain.results.threads import Thread, ThreadCost, ThreadCounts, ThreadCreated, ThreadShown
from council.domain.review import DEFAULT, Review
from council.errors import NotFound
from council.ledger.budgets import Budgets, shown_state
from council.ledger.events import append
from council.ledger.pg import Connection, Row, column, fetch, fetch_one
from council.ledger.review import ReviewStore
from council.ledger.rule_sets import RuleSets

DEFAULT_GROUPING = "indep-v1"


class Threads:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def create(
        self,
        *,
        title: str,
        objective: str,
        actor: str,
        rule_set_id: str | None = None,
        grouping_algorithm_id: str = DEFAULT_GROUPING,
        review: Review = DEFAULT,
    ) -> ThreadCreated:
        """The thread and its main branch, pinned to a rule set (by default the one
        pinned for new threads) and grouping version, with its review setting (the
        first row of that setting's history)."""
        title = v.text(title, "title", v.MAX_TITLE)
        objective = v.text(objective, "objective", v.MAX_OBJECTIVE)
        conn = self._conn
        rule_set_id = rule_set_id or RuleSets(conn).pinned()
        _require_text_key(conn, "rule_set_named", rule_set_id, "rule set")
        _require_text_key(conn, "grouping_algorithm_named", grouping_algorithm_id, "grouping algorithm")
        [thread] = fetch(
            conn,
            "add_thread",
            Thread,
            title=title,
            objective=objective,
            rule_set_id=rule_set_id,
            grouping_algorithm_id=grouping_algorithm_id,
        )
        [branch_id] = column(conn, "add_main_branch", UUID, thread_id=thread.id)
        append(
            conn,
            "thread.created",
            actor=actor,
            thread_id=thread.id,
            subject_id=thread.id,
            payload={
                "title": title,
                "rule_set_id": rule_set_id,
                "grouping_algorithm_id": grouping_algorithm_id,
                "review": review.review,
                "delay_s": review.delay_s,
            },
        )
        setting = ReviewStore(conn).set(thread.id, review, actor=actor, reason="thread created", event=False)
        return ThreadCreated.model_validate(
            {**thread.model_dump(), "main_branch_id": branch_id, "review": setting}
        )

    def get(self, thread_id: UUID) -> Thread:
        return Thread.model_validate(_thread(self._conn, thread_id))

    def show(self, thread_id: UUID) -> ThreadShown:
        """A thread with counts of what it holds and what its runs cost."""
        thread = _thread(self._conn, thread_id)
        [counts] = fetch(self._conn, "thread_counts", ThreadCounts, thread_id=thread_id)
        [cost] = fetch(self._conn, "thread_cost", ThreadCost, thread_id=thread_id)
        return ThreadShown.model_validate(
            {
                **thread,
                "main_branch_id": main_branch_id(self._conn, thread_id),
                "counts": counts,
                "cost": cost,
                "review": ReviewStore(self._conn).settings(thread_id).current,
                "budget": shown_state(Budgets(self._conn).state(thread_id)),
            }
        )

    def main_branch_id(self, thread_id: UUID) -> UUID:
        return main_branch_id(self._conn, thread_id)


def main_branch_id(conn: Connection, thread_id: UUID) -> UUID:
    [main] = column(conn, "main_branch", UUID, thread_id=thread_id)  # exactly one
    return main


def _thread(conn: Connection, thread_id: UUID) -> Row:
    found = fetch_one(conn, "thread_row", Row, thread_id=thread_id)
    if found is None:
        raise NotFound(f"no thread with id {thread_id}")
    return found


def _require_text_key(conn: Connection, name: str, key: str, what: str) -> None:
    if not column(conn, name, object, key=key):
        raise NotFound(f"no {what} named {key!r}")
