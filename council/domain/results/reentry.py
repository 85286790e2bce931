"""What `council lint` returns (the reentry packet is ``council.domain.reentry.ReentryPacket``)."""

from __future__ import annotations

from council.domain.results.base import Result


class LintFinding(Result):
    sentence: str
    word: str
    category: str
    item_id: str | None
    reason: str


class LintReport(Result):
    ok: bool
    findings: list[LintFinding]
