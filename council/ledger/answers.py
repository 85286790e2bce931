"""Every answer kept (docs/architecture.md §7, migration 0026): the text each round of a run attempt
returned, stored once by the SHA-256 of its full text, bounded in size with its original
byte length and a truncated flag. Rows are immutable.
"""

from __future__ import annotations

import hashlib
from typing import Any
from uuid import UUID

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    ForeignKey,
    Index,
    Integer,
    Table,
    Text,
    UniqueConstraint,
    select,
)
from sqlalchemy.dialects.postgresql import insert

from council.ledger.table_helpers import created, fk, id_column, metadata

MAX_ANSWER_BYTES = 256 * 1024  # a stored answer's bound; longer texts are cut and say so

answer_texts = Table(
    "answer_texts",
    metadata,
    Column("sha256", Text, primary_key=True),
    Column("body", Text, nullable=False),
    Column("byte_length", Integer, nullable=False),
    Column("truncated", Boolean, nullable=False),
    created(clock=True),
    comment="A text a model or agent CLI returned, once per SHA-256 of its full text; body is cut "
    "at the bound when truncated",
)

run_answers = Table(
    "run_answers",
    metadata,
    id_column(),
    fk("run_id", "agent_runs.id"),
    Column("attempt", Integer, nullable=False),
    Column("round", Integer, nullable=False),
    Column("answer_sha256", Text, ForeignKey("answer_texts.sha256"), nullable=False),
    created(clock=True),
    UniqueConstraint("run_id", "attempt", "round"),
    Index("run_answers_sha_idx", "answer_sha256"),
    comment="The text one round of a run attempt returned (0 = first call; later = tool or re-prompt rounds)",
)


def bounded(text: str, limit: int = MAX_ANSWER_BYTES) -> tuple[str, int, bool]:
    """The text cut to ``limit`` UTF-8 bytes (never mid-character), its byte length, whether cut."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text, len(raw), False
    return raw[:limit].decode("utf-8", errors="ignore"), len(raw), True


class Answers:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def keep(self, run_id: UUID, attempt: int, round_no: int, text: str) -> str:
        """Store what round ``round_no`` of the attempt returned; the text once by its hash.
        Returns the SHA-256. Keeping the same round twice is a no-op (a retried call)."""
        sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
        body, length, cut = bounded(text)
        self._conn.execute(
            insert(answer_texts)
            .values(sha256=sha, body=body, byte_length=length, truncated=cut)
            .on_conflict_do_nothing(index_elements=["sha256"])
        )
        self._conn.execute(
            insert(run_answers)
            .values(run_id=run_id, attempt=attempt, round=round_no, answer_sha256=sha)
            .on_conflict_do_nothing(index_elements=["run_id", "attempt", "round"])
        )
        return sha

    def of_run(self, run_id: UUID) -> list[dict[str, Any]]:
        """Every kept round of the run, by attempt and round."""
        a, x = run_answers.c, answer_texts.c
        rows = self._conn.execute(
            select(
                a.attempt,
                a.round,
                a.answer_sha256.label("sha256"),
                x.body.label("text"),
                x.byte_length,
                x.truncated,
                a.created_at,
            )
            .join(answer_texts, x.sha256 == a.answer_sha256)
            .where(a.run_id == run_id)
            .order_by(a.attempt, a.round)
        ).mappings()
        return [dict(r) for r in rows]
