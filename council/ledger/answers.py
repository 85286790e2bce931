"""Every answer kept (docs/architecture.md §7, migration 0026): the text each round of a run attempt
returned, stored once by the SHA-256 of its full text, bounded in size with its original
byte length and a truncated flag. Rows are immutable. Named SQL: council/sql/run_records.sql.
"""

from __future__ import annotations

import hashlib
from typing import TypedDict
from uuid import UUID

from council.domain.results.runs import RunAnswer
from council.ledger.pg import Connection, execute, fetch

MAX_ANSWER_BYTES = 256 * 1024  # a stored answer's bound; longer texts are cut and say so


def bounded(text: str, limit: int = MAX_ANSWER_BYTES) -> tuple[str, int, bool]:
    """The text cut to ``limit`` UTF-8 bytes (never mid-character), its byte length, whether cut."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text, len(raw), False
    return raw[:limit].decode("utf-8", errors="ignore"), len(raw), True


class AnswerParameters(TypedDict):
    """The named queries' parameters that keep one round's answer (keep_answer, keep_answer_and_fence)."""

    sha256: str
    body: str
    byte_length: int
    truncated: bool
    run_id: UUID
    attempt: int
    round: int


def answer_parameters(run_id: UUID, attempt: int, round_no: int, text: str) -> AnswerParameters:
    """The text's SHA-256 (of the full text), its bounded body, and the round it answers."""
    body, length, cut = bounded(text)
    return AnswerParameters(
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        body=body,
        byte_length=length,
        truncated=cut,
        run_id=run_id,
        attempt=attempt,
        round=round_no,
    )


class Answers:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def keep(self, run_id: UUID, attempt: int, round_no: int, text: str) -> str:
        """Store what round ``round_no`` of the attempt returned; the text once by its hash.
        Returns the SHA-256. Keeping the same round twice is a no-op (a retried call)."""
        kept = answer_parameters(run_id, attempt, round_no, text)
        execute(self._conn, "keep_answer", **kept)
        return kept["sha256"]

    def of_run(self, run_id: UUID) -> list[RunAnswer]:
        """Every kept round of the run, by attempt and round."""
        return fetch(self._conn, "answers_of_run", RunAnswer, run_id=run_id)
