"""Observing real disagreement: an import, a resolution and `council eval`'s report, as the
commands that make them return them (docs/guide/observe.md defines every figure of the report)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from council.domain.results.base import Document, Result, Row


class Imported(Result):
    """`council import`: the file's import, or the earlier one (``created`` false: nothing written)."""

    import_id: UUID
    file_sha256: str
    format: str
    file_name: str
    records: int
    turns: int
    created: bool
    thread_ids: list[UUID]  # the records' threads, in file order (empty when nothing was written)


class Resolved(Row):
    """`council resolve`: the resolution appended, and the one it superseded (if any)."""

    id: UUID
    node_version_id: UUID
    thread_id: UUID
    outcome: bool
    source: str
    reason: str
    actor: str
    created_at: datetime
    supersedes: UUID | None


class EvalReport(Result):
    """`council eval`: every figure docs/guide/observe.md defines, over the resolved records selected.
    ``council`` and ``oracle_gap.council`` are keyed by rule set; the first of
    ``rule_sets`` is the one cost is counted under. Same inputs, same bytes:
    ``report_sha256`` is the SHA-256 of the canonical JSON of the rest."""

    rule_sets: list[str]
    records: int
    resolved: int
    agents: Document
    majority: Document
    council: Document
    effective_votes: Document
    oracle_gap: Document
    calibration: Document | None
    cost: Document | None
    report_sha256: str


class DebateExport(Result):
    """`council export --format json`: the thread as one council-debate-v1 record (docs/guide/observe.md);
    ``out``: the file it was also written to (one JSON line), if any."""

    record: Document
    out: str | None = None
