"""The epistemic-word check in the caller's transaction (a run's prose, before its writes)."""

from __future__ import annotations

from uuid import UUID

from council.domain.epistemic import guarded_words, lint
from council.domain.results.reentry import LintFinding
from council.services.ports import Tx


def lint_prose(tx: Tx, thread_id: UUID, text: str) -> list[LintFinding]:
    """Each sentence of ``text`` that uses a guarded word about an item lacking the matching
    transition; the ledger is read only when a guarded word occurs."""
    if not guarded_words(text):
        return []  # nothing to check against the ledger: skip loading it
    return [
        LintFinding(sentence=f.sentence, word=f.word, category=f.category, item_id=f.item_id, reason=f.reason)
        for f in lint(text, tx.lint.items(thread_id))
    ]
