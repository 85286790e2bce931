"""Threads: a question, its objective, pinned rule versions and its main branch."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Engine, Table, func, insert, select

from council.domain import validate as v
from council.errors import NotFound
from council.ledger import events
from council.ledger import tables as t
from council.ledger.db import unit_of_work
from council.ledger.lookup import require

DEFAULT_RULE_SET = "council-default-v1"
DEFAULT_GROUPING = "indep-v1"


def create_thread(
    engine: Engine,
    *,
    title: str,
    objective: str,
    actor: str,
    rule_set_id: str = DEFAULT_RULE_SET,
    grouping_algorithm_id: str = DEFAULT_GROUPING,
) -> dict[str, Any]:
    title = v.text(title, "title", v.MAX_TITLE)
    objective = v.text(objective, "objective", v.MAX_OBJECTIVE)
    with unit_of_work(engine) as conn:
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
        events.append(
            conn,
            "thread.created",
            actor=actor,
            thread_id=thread["id"],
            subject_id=thread["id"],
            payload={
                "title": title,
                "rule_set_id": rule_set_id,
                "grouping_algorithm_id": grouping_algorithm_id,
            },
        )
        return {**dict(thread), "main_branch_id": branch_id}


def _require_text_key(conn: Connection, table: Table, key: str, what: str) -> None:
    if conn.execute(select(table.c.id).where(table.c.id == key)).first() is None:
        raise NotFound(f"no {what} named {key!r}")


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


def show_thread(engine: Engine, thread_id: UUID) -> dict[str, Any]:
    with unit_of_work(engine) as conn:
        thread = dict(require(conn, t.threads, thread_id, "thread"))
        counts: dict[str, int] = {}
        for name, table in (
            ("branches", t.branches),
            ("nodes", t.logical_nodes),
            ("node_versions", t.node_versions),
            ("runs", t.agent_runs),
            ("evidence", t.thread_evidence),
            ("events", t.events),
        ):
            counts[name] = conn.execute(
                select(func.count()).select_from(table).where(table.c.thread_id == thread_id)
            ).scalar_one()
        thread["main_branch_id"] = main_branch_id(conn, thread_id)
        thread["counts"] = counts
        return thread


def list_threads(engine: Engine) -> list[dict[str, Any]]:
    with unit_of_work(engine) as conn:
        rows = conn.execute(select(t.threads).order_by(t.threads.c.created_at, t.threads.c.id)).mappings()
        return [dict(row) for row in rows]
