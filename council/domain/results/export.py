"""What `council export` returns: a thread's decision record (docs/reference/formats.md),
or an imported thread's council-debate-v1 record, or the record as Markdown.

The decision record is a pure function of the ledger: no field says when it was made,
lists are in creation order (then id), and its JSON is printed with sorted keys, so the
same ledger gives the same bytes. schema/decision-record.schema.json is generated from
:class:`DecisionRecord` (``python -m tests.published --write``)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from council.domain.results.answer import AgentSummary, Answer
from council.domain.results.base import Document, Result, Row
from council.domain.results.learning import StanceChange
from council.domain.results.runs import Cost

DECISION_RECORD_FORMAT = "council-decision-record-v1"


class RecordThread(Row):
    id: UUID
    title: str
    objective: str
    rule_set_id: str
    grouping_algorithm_id: str
    created_at: datetime


class RecordEvidence(Row):
    """An evidence item of the thread and whether it still stands (``validity``)."""

    id: UUID
    title: str
    source_kind: str
    source_uri: str | None
    media_type: str
    content_sha256: str
    validity: str
    validity_changed_at: datetime
    added_at: datetime


class RecordVersion(Row):
    version_id: UUID
    version_no: int
    parent_version_id: UUID | None
    branch_id: UUID
    content: str
    content_sha256: str
    status: str
    created_by_run_id: UUID | None
    created_at: datetime


class RecordGroup(Result):
    """An independence group of the runs that claimed on a head version, as of the export
    (the grouping algorithm the thread pins)."""

    id: str
    kind: str  # support | dispute
    runs: list[str]
    providers: list[str]
    max_confidence: float
    component_runs: list[str]


class RecordReason(Result):
    """A rule of the pinned rule set and whether it held (``ok``), with its detail."""

    rule: str
    ok: bool
    detail: str


class RecordConsolidation(Result):
    """A consolidation of the proposition: the version decided, the rules' reasons, and the
    snapshot hash (``council replay`` recomputes it from the rows the snapshot names)."""

    id: UUID
    node_version_id: UUID
    rule_set_id: str
    grouping_algorithm_id: str
    snapshot_sha256: str
    outcome: str
    reasons: list[RecordReason]
    status: str
    status_changed_at: datetime
    created_at: datetime


class RecordProposition(Result):
    """A logical node: its head version, every version, the independence groups of the
    head's claims (``n_eff``: effective independent support votes from the correlation
    table a v3 snapshot carries; null when the thread's rule set measures none) and its
    consolidations."""

    logical_node_id: UUID
    head_version_id: UUID
    status: str
    content: str
    versions: list[RecordVersion]
    grouping_algorithm_id: str
    independence_groups: list[RecordGroup]
    support_groups: int
    dispute_groups: int
    n_eff: float | None
    consolidations: list[RecordConsolidation]


class RecordClaim(Row):
    id: UUID
    node_version_id: UUID
    claim_type: str
    confidence: float
    rationale: str
    created_at: datetime


class RecordAnswer(Result):
    """The kept answer text of the run's last kept round (``run show``'s ``answer``), cut to
    an excerpt of at most ``EXCERPT_CHARS`` characters (``excerpt_cut``); ``sha256`` is
    the whole kept text's."""

    sha256: str
    excerpt: str
    excerpt_cut: bool
    byte_length: int


class RecordRun(Result):
    id: UUID
    agent: str
    model: str
    provider: str
    simulated: bool
    round: int
    mode: str
    status: str
    created_at: datetime
    answer: RecordAnswer | None
    claims: list[RecordClaim]
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None


class RecordVote(Row):
    id: UUID
    run_id: UUID
    agent: str
    provider: str
    vote: str
    confidence: float
    rationale: str
    created_at: datetime


class RecordAdjudication(Row):
    """A status transition of a retraction proposal (accepted, refused, …) with its reason."""

    id: UUID
    from_status: str
    to_status: str
    reason: str
    actor: str
    details: Document
    created_at: datetime


class RecordRetraction(Result):
    """A retraction proposal against a consolidation, its votes and its adjudications."""

    id: UUID
    consolidation_id: UUID
    node_version_id: UUID
    reason: str
    rule_set_id: str
    grouping_algorithm_id: str
    opened_by: str
    status: str
    status_changed_at: datetime
    created_at: datetime
    votes: list[RecordVote]
    adjudications: list[RecordAdjudication]


class DecisionRecord(Result):
    """A thread's decision record, for a person (docs/reference/formats.md): the answer first
    (what the council established, or its live alternatives), each agent's own summary, then
    the question, evidence, propositions, runs, retractions, stance changes and cost."""

    format: Literal["council-decision-record-v1"] = "council-decision-record-v1"
    answer: Answer
    summaries: list[AgentSummary]
    question: str
    thread: RecordThread
    evidence: list[RecordEvidence]
    propositions: list[RecordProposition]
    runs: list[RecordRun]
    retractions: list[RecordRetraction]
    stance_changes: list[StanceChange]
    cost: Cost


class ThreadExport(Result):
    """`council export --json`: which format was made and the document: ``record`` (a
    council-debate-v1 record), ``decision_record`` or ``markdown``, one of them set;
    ``out``: the new file it was written to instead of stdout, if any."""

    format: Literal["council-debate-v1", "decision-record", "markdown"]
    thread_id: UUID
    record: Document | None = None
    decision_record: DecisionRecord | None = None
    markdown: str | None = None
    out: str | None = None
