"""Threads: a question, its objective, pinned rule versions and its main branch."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import Connection, Table, func, insert, select

from council.domain import validate as v
from council.domain.results.threads import Thread, ThreadCounts, ThreadCreated, ThreadShown
from council.domain.review import DEFAULT, Review
from council.errors import NotFound
from council.ledger import tables as t
from council.ledger.events import append
from council.ledger.lookup import require
from council.ledger.review import ReviewStore
from council.ledger.rule_sets import RuleSets

DEFAULT_GROUPING = "indep-v1"
_COUNTED = (
    ("branches", t.branches),
    ("nodes", t.logical_nodes),
    ("node_versions", t.node_versions),
    ("runs", t.agent_runs),
    ("evidence", t.thread_evidence),
    ("events", t.events),
)


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
        _require_text_key(conn, t.rule_sets, rule_set_id, "rule set")
        _require_text_key(conn, t.grouping_algorithms, grouping_algorithm_id, "grouping algorithm")
        thread = (
            conn.execute(
                insert(t.threads)
                .values(
                    title=title,
                    objective=objective,
                    rule_set_id=rule_set_id,
                    grouping_algorithm_id=grouping_algorithm_id,
                )
                .returning(t.threads)
            )
            .mappings()
            .one()
        )
        branch_id = conn.execute(
            insert(t.branches)
            .values(thread_id=thread["id"], kind="main", label="main")
            .returning(t.branches.c.id)
        ).scalar_one()
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
        return Thread.model_validate(dict(require(self._conn, t.threads, thread_id, "thread")))

    def show(self, thread_id: UUID) -> ThreadShown:
        """A thread with counts of what it holds."""
        thread = dict(require(self._conn, t.threads, thread_id, "thread"))
        counts = {
            name: self._conn.execute(
                select(func.count()).select_from(table).where(table.c.thread_id == thread_id)
            ).scalar_one()
            for name, table in _COUNTED
        }
        return ThreadShown.model_validate(
            {
                **thread,
                "main_branch_id": main_branch_id(self._conn, thread_id),
                "counts": ThreadCounts(**counts),
                "review": ReviewStore(self._conn).settings(thread_id).current,
            }
        )

    def main_branch_id(self, thread_id: UUID) -> UUID:
        return main_branch_id(self._conn, thread_id)


def main_branch_id(conn: Connection, thread_id: UUID) -> UUID:
    return UUID(
        str(
            conn.execute(
                select(t.branches.c.id).where(
                    t.branches.c.thread_id == thread_id, t.branches.c.kind == "main"
                )
            ).scalar_one()
        )
    )


def _require_text_key(conn: Connection, table: Table, key: str, what: str) -> None:
    if conn.execute(select(table.c.id).where(table.c.id == key)).first() is None:
        raise NotFound(f"no {what} named {key!r}")
