"""Use cases of resuming: the reentry packet (docs/architecture.md §6) and the epistemic-word check
(both read in the caller's transaction by ``council.services.in_tx``)."""

from __future__ import annotations

from council.domain.commands import IdRef
from council.domain.reentry import ReentryPacket
from council.domain.results.reentry import LintReport
from council.errors import BadInput
from council.services.in_tx.briefing import read_packet
from council.services.in_tx.lint import lint_prose
from council.services.ports import UnitOfWork

DEFAULT_BUDGET = 4000
MIN_BUDGET, MAX_BUDGET = 500, 200_000


def reentry_packet(
    uow: UnitOfWork, thread: IdRef, *, budget: int = DEFAULT_BUDGET, blind: bool = False
) -> ReentryPacket:
    """What is still open, contested or awaiting evidence, within a token budget
    (``blind``: stances redacted, as the agents' briefing)."""
    check_budget(budget)
    with uow() as tx:
        return read_packet(tx, tx.resolve("thread", thread), budget=budget, blind=blind)


def check_budget(budget: int) -> None:
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise BadInput(f"budget must be between {MIN_BUDGET} and {MAX_BUDGET} tokens, got {budget}")


def lint_text(uow: UnitOfWork, thread: IdRef, text: str) -> LintReport:
    """Each sentence that uses a guarded word about an item lacking the matching transition."""
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        findings = lint_prose(tx, thread_id, text)
    return LintReport(ok=not findings, findings=findings)
