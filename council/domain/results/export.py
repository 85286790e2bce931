"""What `council export` returns: a thread's decision record (docs/reference/formats.md),
or an imported thread's council-debate-v1 record, or the record as Markdown.

The decision record is a function of the ledger and the moment it was exported
(``exported_at``, its only field the ledger does not decide): lists are in creation order
(then id) and its JSON is printed with sorted keys, so the same ledger exported at the
same moment gives the same bytes. schema/decision-record.schema.json is generated from
:class:`DecisionRecord` (``python -m tests.published --write``)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol
from uuid import UUID

from council.domain.results.answer import AgentSummary, Answer
from council.domain.results.base import Document, Result, Row
from council.domain.results.learning import StanceChange
from council.domain.results.runs import Cost

DECISION_RECORD_FORMAT = "council-decision-record-v1"
RoundSource = Literal["dispatch", "import", "recorded"]


class _Sourced(Protocol):
    @property
    def dispatch_id(self) -> UUID | None: ...
    @property
    def mode(self) -> str: ...


def round_source(run: _Sourced) -> RoundSource:
    """Where a run's round comes from: its dispatch, an import, or a recording by hand."""
    if run.dispatch_id is not None:
        return "dispatch"
    return "import" if run.mode == "imported" else "recorded"


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


class GroupMember(Result):
    """An agent of an independence group and how many of the group's runs are its."""

    agent: str
    runs: int


class RecordGroup(Result):
    """An independence group of the runs that claimed on a head version, as of the export
    (the grouping algorithm the thread pins); ``agents``: its members, each agent once."""

    id: str
    kind: str  # support | dispute
    agents: list[GroupMember]
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


class RecordResolution(Result):
    """An outside fact deciding a version of the node true or false (`council resolve`, or
    an imported record's truth); the latest of a version is ``in_force``."""

    id: UUID
    node_version_id: UUID
    outcome: bool
    source: str
    reason: str
    actor: str
    created_at: datetime
    in_force: bool


class RecordProposition(Result):
    """A logical node: its head version, every version, the independence groups of the
    head's claims (``n_eff``: effective independent support votes from the correlation
    table a v3 snapshot carries; null when the thread's rule set measures none), its
    consolidations and its resolutions."""

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
    resolutions: list[RecordResolution]


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
    the whole kept text's. ``readable``: the answer as a person reads it — an agent's JSON
    answer as its summary, the propositions it made and its claims with their rationales,
    one a line; any other text as it is — cut alike."""

    sha256: str
    excerpt: str
    excerpt_cut: bool
    byte_length: int
    readable: str


class RecordRun(Result):
    """A run: ``round`` as `run show` numbers it (``debate_round``: an imported turn's round
    in the record it came from, null otherwise); ``error``: why it failed."""

    id: UUID
    dispatch_id: UUID | None
    agent: str
    model: str
    provider: str
    simulated: bool
    round: int
    debate_round: int | None
    mode: str
    status: str
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    answer: RecordAnswer | None
    claims: list[RecordClaim]
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None


class RecordRound(Result):
    """A round and when it ran: from its first run's creation to its last run's end
    (``finished_at`` null while a run is unfinished). ``source``: a dispatch's round (its
    ``dispatch_id``), an import's, or runs recorded by hand (`council run record`)."""

    source: RoundSource
    dispatch_id: UUID | None
    round: int
    runs: int
    failed: int
    started_at: datetime
    finished_at: datetime | None


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
    the question, evidence, propositions, rounds, runs, retractions, stance changes and cost;
    ``exported_at``: when it was made."""

    format: Literal["council-decision-record-v1"] = "council-decision-record-v1"
    answer: Answer
    summaries: list[AgentSummary]
    question: str
    thread: RecordThread
    exported_at: datetime
    rounds: list[RecordRound]
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
