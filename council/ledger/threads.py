"""Threads: a question, its objective, pinned rule versions and its main branch.
Named SQL: council/sql/thread_store.sql."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from council.domain import validate as v
from council.domain.results.threads import Thread, ThreadCost, ThreadCounts, ThreadCreated, ThreadShown
from council.domain.review import DEFAULT, Review
from council.errors import NotFound
from council.ledger.budgets import Budgets, shown_state
from council.ledger.events import append
from council.ledger.pg import Connection, in_transaction
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
        thread: dict[str, Any] = in_transaction(
            conn,
            "add_thread",
            {
                "title": title,
                "objective": objective,
                "rule_set_id": rule_set_id,
                "grouping_algorithm_id": grouping_algorithm_id,
            },
        )[0]
        branch_id = in_transaction(conn, "add_main_branch", {"thread_id": thread["id"]}, as_tuples=True)[0].id
        append(
            conn,
            "thread.created",
            actor=actor,
            thread_id=thread["id"],
            subject_id=thread["id"],
            payload={
                "title": title,
                "rule_set_id": rule_set_id,
                "grouping_algorithm_id": grouping_algorithm_id,
                "review": review.review,
                "delay_s": review.delay_s,
            },
        )
        setting = ReviewStore(conn).set(
            thread["id"], review, actor=actor, reason="thread created", event=False
        )
        return ThreadCreated.model_validate({**thread, "main_branch_id": branch_id, "review": setting})

    def get(self, thread_id: UUID) -> Thread:
        return Thread.model_validate(_thread(self._conn, thread_id))

    def show(self, thread_id: UUID) -> ThreadShown:
        """A thread with counts of what it holds and what its runs cost."""
        thread = _thread(self._conn, thread_id)
        counts = in_transaction(self._conn, "thread_counts", {"thread_id": thread_id})[0]
        cost = in_transaction(self._conn, "thread_cost", {"thread_id": thread_id})[0]
        return ThreadShown.model_validate(
            {
                **thread,
                "main_branch_id": main_branch_id(self._conn, thread_id),
                "counts": ThreadCounts(**counts),
                "cost": ThreadCost(**cost),
                "review": ReviewStore(self._conn).settings(thread_id).current,
                "budget": shown_state(Budgets(self._conn).state(thread_id)),
            }
        )

    def main_branch_id(self, thread_id: UUID) -> UUID:
        return main_branch_id(self._conn, thread_id)


def main_branch_id(conn: Connection, thread_id: UUID) -> UUID:
    (main,) = in_transaction(conn, "main_branch", {"thread_id": thread_id}, as_tuples=True)  # exactly one
    return UUID(str(main.id))


def _thread(conn: Connection, thread_id: UUID) -> dict[str, Any]:
    found = in_transaction(conn, "thread_row", {"thread_id": thread_id})
    if not found:
        raise NotFound(f"no thread with id {thread_id}")
    row: dict[str, Any] = found[0]
    return row


def _require_text_key(conn: Connection, name: str, key: str, what: str) -> None:
    if not in_transaction(conn, name, {"key": key}):
        raise NotFound(f"no {what} named {key!r}")
