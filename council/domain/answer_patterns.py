"""An import's answer pattern (``council import --answer-pattern``), run under a time limit.

A regular expression with nested quantifiers — ``(a+)+$`` — backtracks for ever on a
text that almost matches, and a debate file is untrusted input with thousands of
answers. The pattern runs on the ``regex`` engine, whose matching takes a timeout: all
the matches of one file share ``BUDGET_S`` seconds, and a pattern that spends them is
refused (:class:`PatternTooSlow`) with a reason, never left running.
"""

from __future__ import annotations

import time

import regex

BUDGET_S = 10.0


class PatternTooSlow(ValueError):
    """The pattern spent the file's time budget."""


class AnswerPattern:
    """A compiled answer pattern and what is left of its time budget."""

    def __init__(self, source: str, budget_s: float | None = None) -> None:
        try:
            self._pattern = regex.compile(source)
        except regex.error as exc:
            raise ValueError(str(exc)) from None
        self.budget_s = BUDGET_S if budget_s is None else budget_s
        self._deadline: float | None = None

    def last(self, text: str) -> str | None:
        """The last match in ``text`` (its first group, if the pattern has one), trimmed;
        None when there is none (or it is blank)."""
        if self._deadline is None:
            self._deadline = time.monotonic() + self.budget_s
        found = None
        try:
            for match in self._pattern.finditer(text, timeout=max(0.001, self._deadline - time.monotonic())):
                found = match.group(1) if match.groups() else match.group(0)
        except TimeoutError:
            raise PatternTooSlow(
                f"--answer-pattern ran past its {self.budget_s:g} s over this file's answers: a pattern "
                "with nested quantifiers such as (a+)+ backtracks without end; simplify it"
            ) from None
        return None if found is None or not found.strip() else found.strip()
