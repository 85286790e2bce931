"""Use case of `council export`: a thread's decision record, for a person
(docs/reference/formats.md), as JSON or Markdown; an imported thread's `--format json`
stays the council-debate-v1 record it came from (docs/guide/observe.md).

Reads only, in one transaction over the existing stores. Deterministic but for the moment
it was made: the same ledger exported at the same ``exported_at`` gives the same bytes
(:func:`record_json`: sorted keys; lists by creation, then id). :func:`thread_answer` is
the record's ``answer`` alone (the page's answer panel, ``GET /threads/{id}/answer``)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TypeVar
from uuid import UUID

from council.domain.answer import LIVE_STATUSES, Candidate, answer_of, summaries
from council.domain.commands import IdRef
from council.domain.decision_markdown import render_decision_record
from council.domain.readable_answer import readable
from council.domain.results.answer import Answer, AnswerGroup
from council.domain.results.export import (
    DecisionRecord,
    GroupMember,
    RecordAdjudication,
    RecordAnswer,
    RecordClaim,
    RecordConsolidation,
    RecordEvidence,
    RecordGroup,
    RecordProposition,
    RecordReason,
    RecordResolution,
    RecordRetraction,
    RecordRound,
    RecordRun,
    RecordThread,
    RecordVersion,
    RecordVote,
    RoundSource,
    ThreadExport,
    round_source,
)
from council.domain.results.graph import AlternativeSet
from council.domain.results.learning import StanceChange
from council.domain.results.lists import RunItem
from council.domain.results.runs import Cost
from council.domain.rules import group_dict, groups_of, support_n_eff
from council.errors import BadInput
from council.ledger.export_reads import ExportReads, VersionRow
from council.ledger.lists import Lists
from council.services.learning import stance_class
from council.services.observation import export_debate
from council.services.ports import Tx, UnitOfWork

FORMATS = ("json", "markdown", "debate", "council-debate-v1")
EXCERPT_CHARS = 2000  # of a run's kept answer text in the record
MAX_RUNS = 10_000
# Written as \\u escapes, as json writes C0 controls: DEL and C1 controls, the bidirectional
# marks, embeddings, overrides and isolates, and the line and paragraph separators, so the
# record's bytes show the same on a terminal as in a file (council.domain.terminal).
_UNSHOWN = re.compile("[\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]")

T = TypeVar("T")


def export_thread(uow: UnitOfWork, thread: IdRef, fmt: str, *, at: datetime | None = None) -> ThreadExport:
    """The thread in ``fmt``: ``json`` is the decision record, except for a thread made by
    import (then its council-debate-v1 record, as it came); ``debate`` (or
    ``council-debate-v1``) that record for any thread; ``markdown`` the decision record
    as Markdown. ``at``: the moment the record says it was exported (now by default)."""
    if fmt not in FORMATS:
        raise BadInput(f"invalid --format: {fmt!r} (expected json, markdown or debate)")
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        imported = ExportReads(tx.conn).imported(thread_id)
    if fmt in ("debate", "council-debate-v1") or (fmt == "json" and imported):
        debate = export_debate(uow, thread_id)
        return ThreadExport(format="council-debate-v1", thread_id=thread_id, record=debate.record)
    record = decision_record(uow, thread_id, at=at)
    if fmt == "markdown":
        return ThreadExport(format="markdown", thread_id=thread_id, markdown=render_decision_record(record))
    return ThreadExport(format="decision-record", thread_id=thread_id, decision_record=record)


def record_json(record: DecisionRecord) -> str:
    """The decision record's bytes: sorted keys, two-space indent, one final newline; a
    control or bidirectional character inside a string written as its escape."""
    text = json.dumps(record.json_document(), ensure_ascii=False, indent=2, sort_keys=True)
    return _UNSHOWN.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def decision_record(uow: UnitOfWork, thread: IdRef, *, at: datetime | None = None) -> DecisionRecord:
    """The thread's question, evidence, propositions with their versions, groups,
    consolidations and resolutions, rounds, runs with their answers and claims,
    retractions, stance changes and cost, exported ``at`` (now by default)."""
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        return _read(tx, thread_id, at or datetime.now(UTC))


def thread_answer(uow: UnitOfWork, thread: IdRef) -> Answer:
    """The thread's answer, as its decision record leads with it (without reading the rest)."""
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        reads = ExportReads(tx.conn)
        items = _runs_of(Lists(tx.conn), thread_id)
        agents = {str(r.id): r.agent for r in items}
        propositions = _propositions(tx, reads, thread_id, agents)
        sets = tx.alternatives.of_thread(thread_id)
        return _answer(propositions, agents, reads.contradicts(thread_id), sets)


def _runs_of(lists: Lists, thread_id: UUID) -> list[RunItem]:
    items, truncated = lists.runs(thread_id=thread_id, limit=MAX_RUNS)
    if truncated:
        raise BadInput(f"thread {thread_id} has more than {MAX_RUNS} runs: too many to export")
    return _ordered(items, lambda r: (r.created_at, str(r.id)))


def _read(tx: Tx, thread_id: UUID, at: datetime) -> DecisionRecord:
    shown = tx.threads.get(thread_id)
    lists, reads = Lists(tx.conn), ExportReads(tx.conn)
    items = _runs_of(lists, thread_id)
    said: dict[str, tuple[str, UUID, int, str]] = {}  # each agent's last answer (agent, run, round, text)
    debate_rounds = reads.debate_rounds(thread_id)
    runs = [_run(tx, item, said, debate_rounds.get(item.id)) for item in items]
    agents = {str(r.id): r.agent for r in runs}
    propositions = _propositions(tx, reads, thread_id, agents)
    sets = tx.alternatives.of_thread(thread_id)
    return DecisionRecord(
        answer=_answer(propositions, agents, reads.contradicts(thread_id), sets),
        summaries=summaries(list(said.values())),
        question=shown.objective,
        thread=RecordThread.model_validate(shown.model_dump()),
        exported_at=at,
        rounds=_rounds(items),
        evidence=[
            RecordEvidence.model_validate(e.model_dump())
            for e in _ordered(lists.evidence(thread_id), lambda e: (e.added_at, str(e.id)))
        ],
        propositions=propositions,
        runs=runs,
        retractions=_retractions(reads, thread_id),
        stance_changes=[
            StanceChange.model_validate({**row, "change_class": stance_class(row)})
            for row in _ordered(
                tx.learning.stance_changes(thread_id), lambda r: (r["created_at"], str(r["claim_id"]))
            )
        ],
        cost=Cost.of(items),
    )


def _ordered(rows: Iterable[T], key: Callable[[T], tuple[datetime, str]]) -> list[T]:
    return sorted(rows, key=key)


def _rounds(items: list[RunItem]) -> list[RecordRound]:
    """Each round of each dispatch, import or recording by hand, in the order it opened,
    with its span: its first run's creation to its last run's end."""
    found: dict[tuple[UUID | None, int, RoundSource], list[RunItem]] = {}
    for item in items:
        found.setdefault((item.dispatch_id, item.round, round_source(item)), []).append(item)
    rounds = []
    for (dispatch_id, round_no, source), runs in found.items():
        ends = [r.finished_at for r in runs]
        rounds.append(
            RecordRound(
                source=source,
                dispatch_id=dispatch_id,
                round=round_no,
                runs=len(runs),
                failed=sum(r.status == "failed" for r in runs),
                started_at=min(r.created_at for r in runs),
                finished_at=None if any(e is None for e in ends) else max(e for e in ends if e is not None),
            )
        )
    return sorted(rounds, key=lambda r: (r.started_at, str(r.dispatch_id), r.round, r.source))


def _run(
    tx: Tx, item: RunItem, said: dict[str, tuple[str, UUID, int, str]], debate_round: int | None
) -> RecordRun:
    """The run's record; an answered council run's kept answer is its agent's last in ``said``
    (runs come in creation order; a control run is no council member)."""
    shown = tx.runs.show(item.id)
    answer = None
    if shown.answer is not None:
        text = shown.answer.text
        if item.status == "succeeded" and item.control_of is None:
            said[item.agent] = (item.agent, item.id, item.round, text)
        answer = RecordAnswer(
            sha256=shown.answer.sha256,
            excerpt=text[:EXCERPT_CHARS],
            excerpt_cut=len(text) > EXCERPT_CHARS or shown.answer.truncated,
            byte_length=shown.answer.byte_length,
            readable=readable(text, EXCERPT_CHARS),
        )
    return RecordRun(
        id=item.id,
        dispatch_id=item.dispatch_id,
        agent=item.agent,
        model=item.model,
        provider=item.provider,
        simulated=item.simulated,
        round=item.round,
        debate_round=debate_round,
        mode=item.mode,
        status=item.status,
        error=item.error,
        created_at=item.created_at,
        started_at=item.started_at,
        finished_at=item.finished_at,
        answer=answer,
        claims=[
            RecordClaim.model_validate(c.model_dump())
            for c in _ordered(shown.claims, lambda c: (c.created_at, str(c.id)))
        ],
        prompt_tokens=item.prompt_tokens,
        completion_tokens=item.completion_tokens,
        cost_usd=item.cost_usd,
    )


def _propositions(
    tx: Tx, reads: ExportReads, thread_id: UUID, agents: dict[str, str]
) -> list[RecordProposition]:
    """Each logical node of the thread; ``agents``: each run's agent, by run id."""
    versions: dict[UUID, list[VersionRow]] = {}
    node_of: dict[UUID, UUID] = {}
    for row in reads.versions(thread_id):
        versions.setdefault(row["logical_node_id"], []).append(row)
        node_of[row["version_id"]] = row["logical_node_id"]
    resolutions: dict[UUID, list[RecordResolution]] = {}
    for r in reads.resolutions(thread_id):
        resolutions.setdefault(node_of[r.node_version_id], []).append(r)
    consolidations: dict[UUID, list[RecordConsolidation]] = {}
    for c in reads.consolidations(thread_id):
        consolidations.setdefault(c["logical_node_id"], []).append(
            RecordConsolidation(
                id=c["id"],
                node_version_id=c["node_version_id"],
                rule_set_id=c["rule_set_id"],
                grouping_algorithm_id=c["grouping_algorithm_id"],
                snapshot_sha256=c["snapshot_sha256"],
                outcome=str(c["decision"].get("outcome", "consolidate")),
                reasons=[RecordReason.model_validate(r) for r in c["decision"].get("reasons", [])],
                status=c["status"],
                status_changed_at=c["status_changed_at"],
                created_at=c["created_at"],
            )
        )
    found = []
    for node_id, rows in versions.items():
        head = next(r for r in rows if r["version_id"] == r["head_version_id"])
        snapshot = tx.consolidations.current_snapshot(head["version_id"])
        groups = groups_of(snapshot)
        found.append(
            RecordProposition(
                logical_node_id=node_id,
                head_version_id=head["version_id"],
                status=head["status"],
                content=head["content"],
                versions=[RecordVersion.model_validate(r) for r in rows],
                grouping_algorithm_id=str(snapshot["grouping"]["id"]),
                independence_groups=[
                    RecordGroup.model_validate({**group_dict(g), "agents": _members(g.runs, agents)})
                    for g in groups
                ],
                support_groups=sum(1 for g in groups if g.kind == "support"),
                dispute_groups=sum(1 for g in groups if g.kind == "dispute"),
                n_eff=support_n_eff(snapshot, groups),  # None unless the snapshot carries a table (v3)
                consolidations=consolidations.get(node_id, []),
                resolutions=resolutions.get(node_id, []),
            )
        )
    return found


def _members(runs: Iterable[str], agents: dict[str, str]) -> list[GroupMember]:
    """A group's agents, each once, with how many of its runs are theirs, by agent."""
    counted = Counter(agents.get(r, "(outside this record)") for r in runs)
    return [GroupMember(agent=agent, runs=n) for agent, n in sorted(counted.items())]


def _answer(
    propositions: list[RecordProposition],
    agents: dict[str, str],
    contradicts: list[tuple[UUID, UUID]],
    sets: list[AlternativeSet],
) -> Answer:
    """The thread's answer among its live propositions (``council.domain.answer``), rivals
    from its alternative sets."""

    def group(g: RecordGroup) -> AnswerGroup:
        who = sorted({agents.get(r, "(outside this record)") for r in g.runs})
        return AnswerGroup(kind=g.kind, agents=who, runs=[UUID(r) for r in g.runs])

    candidates = []
    for p in propositions:
        if p.status not in LIVE_STATUSES:
            continue
        head = next(v for v in p.versions if v.version_id == p.head_version_id)
        live = any(c.status == "live" and c.node_version_id == p.head_version_id for c in p.consolidations)
        groups = [group(g) for g in p.independence_groups]
        candidates.append(
            Candidate(
                version_id=p.head_version_id,
                content=p.content,
                consolidated=live,
                created_at=head.created_at,
                support_groups=tuple(g for g in groups if g.kind == "support"),
                dispute_groups=tuple(g for g in groups if g.kind == "dispute"),
            )
        )
    heads = {p.logical_node_id: p.head_version_id for p in propositions}
    members = [[heads[m.logical_node_id] for m in a.members if m.logical_node_id in heads] for a in sets]
    return answer_of(candidates, contradicts, members)


def _retractions(reads: ExportReads, thread_id: UUID) -> list[RecordRetraction]:
    votes: dict[UUID, list[RecordVote]] = {}
    for v in reads.votes(thread_id):
        votes.setdefault(v["proposal_id"], []).append(RecordVote.model_validate(v))
    adjudications: dict[UUID, list[RecordAdjudication]] = {}
    for a in reads.adjudications(thread_id):
        adjudications.setdefault(a["proposal_id"], []).append(RecordAdjudication.model_validate(a))
    return [
        RecordRetraction.model_validate(
            {**p, "votes": votes.get(p["id"], []), "adjudications": adjudications.get(p["id"], [])}
        )
        for p in reads.proposals(thread_id)
    ]
