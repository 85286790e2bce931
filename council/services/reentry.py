"""Use cases of resuming: the reentry packet (docs/architecture.md §6) and the epistemic-word check."""

from __future__ import annotations

from uuid import UUID

from council.domain.commands import IdRef
from council.domain.epistemic import guarded_words, lint
from council.domain.reentry import ReentryPacket, build_packet
from council.domain.results.reentry import LintFinding, LintReport
from council.errors import BadInput
from council.services.ports import Tx, UnitOfWork

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


def read_packet(
    tx: Tx, thread_id: UUID, *, budget: int, blind: bool, thread_known: bool = False
) -> ReentryPacket:
    """The packet inside the caller's transaction (the compiler's briefing reads it so).
    ``thread_known``: the caller has the thread from a row of this transaction (a claimed
    run's), so it is not looked up again."""
    if not thread_known:
        tx.threads.get(thread_id)
    rows_cap = max(10, budget // 25)  # every item carries ids worth 25+ tokens: more could not fit
    return build_packet(tx.frontier.rows(thread_id, rows_cap=rows_cap), budget=budget, blind=blind)


def lint_text(uow: UnitOfWork, thread: IdRef, text: str) -> LintReport:
    """Each sentence that uses a guarded word about an item lacking the matching transition."""
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        findings = lint_prose(tx, thread_id, text)
    return LintReport(ok=not findings, findings=findings)


def lint_prose(tx: Tx, thread_id: UUID, text: str) -> list[LintFinding]:
    """The check inside the caller's transaction (a run's prose, before its own writes)."""
    if not guarded_words(text):
        return []  # nothing to check against the ledger: skip loading it
    return [
        LintFinding(sentence=f.sentence, word=f.word, category=f.category, item_id=f.item_id, reason=f.reason)
        for f in lint(text, tx.lint.items(thread_id))
    ]
