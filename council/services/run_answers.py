"""Keeping what each round of a run attempt returned (docs/architecture.md §7): an answer
that parses is kept by the transaction that checks and applies it (its first statement,
``Runs.fence_keeping``); these keep it in a transaction of its own when it is not applied —
a tool round, an answer refused before its apply, an apply that rolled back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from uuid import UUID

from council.errors import CouncilError
from council.services.ports import UnitOfWork


def keep_answer(uow: UnitOfWork, run_id: UUID, attempt: int, round_no: int, text: str) -> str:
    """Keep what round ``round_no`` (0 = first call; each tool or re-prompt round after it)
    of the attempt returned, in its own transaction, so a failed run's answer is kept too
    (docs/architecture.md §7). Keyed by attempt, so a fenced-out attempt's text never stands
    for another's. Returns the text's SHA-256. An answer that parses is kept by the
    transaction that checks and applies it instead (``execution._apply``, its first
    statement), and here only when that transaction rolls back."""
    with uow() as tx:
        return tx.answers.keep(run_id, attempt, round_no, text)


@contextmanager
def kept_if_refused(uow: UnitOfWork, run_id: UUID, attempt: int, answer: tuple[int, str]) -> Iterator[None]:
    """Whatever the block raises — the answer does not parse, cites what was not read, or
    its apply's transaction rolled back — the answer ``(round, text)`` is kept in its own
    transaction first, then the error goes on."""
    try:
        yield
    except Exception:
        with suppress(CouncilError):  # the refusal, not a failure to keep, is what the caller meets
            keep_answer(uow, run_id, attempt, *answer)
        raise
