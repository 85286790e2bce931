"""Imported debates and resolutions (migration 0024; docs/guide/observe.md): set-based writes of a
parsed file, a resolution appended, and the rows `council eval` reads.

Every statement is named SQL (council/sql/observation.sql) run on the unit's psycopg
connection in its transaction. An import is written with COPY, table by table, in the
order the foreign keys need; ids are made here, so the rows of one table can name the
rows of another without reading them back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from uuid import UUID, uuid4

from council.domain.alternatives import IMPORTED
from council.domain.debates import Record
from council.domain.providers import provider_family
from council.domain.results.observation import Resolved
from council.known_secrets import refuse_in_parameters
from council.ledger.alternatives import Alternatives, Link, LinkedVersion
from council.ledger.pg import Connection, Row, column, execute, fetch, fetch_one
from council.sql import driver_sql

Progress = Callable[[int, int], None]  # (records written, records in all)
CHUNK = 2_000  # records per COPY round: progress is reported between rounds
UNKNOWN = "unknown"


@dataclass(frozen=True)
class ImportPlan:
    import_id: UUID
    file_sha256: str
    fmt: str
    file_name: str
    actor: str
    rule_set_id: str
    grouping_algorithm_id: str


@dataclass(frozen=True, slots=True)
class ImportRow:
    """A file imported before (its SHA-256 makes a second import of it a no-op)."""

    id: UUID
    file_sha256: str
    format: str
    file_name: str
    records: int
    turns: int
    created_at: datetime


def find_import(conn: Connection, file_sha256: str) -> ImportRow | None:
    return fetch_one(conn, "debate_import_by_sha", ImportRow, file_sha256=file_sha256)


def write_import(
    conn: Connection, plan: ImportPlan, records: Sequence[Record], progress: Progress | None
) -> list[UUID]:
    """Every record of the file, in the caller's transaction; the thread ids, in order."""
    turns = sum(len(r.turns) for r in records)
    execute(
        conn,
        "debate_import_insert",
        id=plan.import_id,
        file_sha256=plan.file_sha256,
        format=plan.fmt,
        file_name=plan.file_name,
        records=len(records),
        turns=turns,
        actor=plan.actor,
    )
    thread_ids: list[UUID] = []
    for start in range(0, len(records), CHUNK):
        tables = _Tables()
        for record in records[start : start + CHUNK]:
            thread_ids.append(tables.add(record, plan))
        with conn.cursor() as cur:
            for name, rows in tables.in_order():
                if rows:
                    refuse_in_parameters(rows)  # the one check of what the ledger stores, as pg's
                    with cur.copy(driver_sql(name)) as copy:
                        for row in rows:
                            copy.write_row(row)
        if progress is not None:
            progress(min(start + CHUNK, len(records)), len(records))
    return thread_ids


class _Tables:
    """The rows of a chunk of records, table by table."""

    def __init__(self) -> None:
        self.threads: list[tuple[object, ...]] = []
        self.branches: list[tuple[object, ...]] = []
        self.imported: list[tuple[object, ...]] = []
        self.nodes: list[tuple[object, ...]] = []
        self.versions: list[tuple[object, ...]] = []
        self.runs: list[tuple[object, ...]] = []
        self.turns: list[tuple[object, ...]] = []
        self.claims: list[tuple[object, ...]] = []
        self.exposures: list[tuple[object, ...]] = []
        self.resolutions: list[tuple[object, ...]] = []
        self.propositions: list[tuple[object, ...]] = []
        self.option_sets: list[tuple[object, ...]] = []
        self.options: list[tuple[object, ...]] = []
        self.events: list[tuple[object, ...]] = []

    def in_order(self) -> list[tuple[str, list[tuple[object, ...]]]]:
        return [
            ("copy_threads", self.threads),
            ("copy_branches", self.branches),
            ("copy_imported_threads", self.imported),
            ("copy_logical_nodes", self.nodes),
            ("copy_node_versions", self.versions),
            ("copy_imported_propositions", self.propositions),
            ("copy_option_sets", self.option_sets),
            ("copy_option_set_members", self.options),
            ("copy_imported_runs", self.runs),
            ("copy_imported_turns", self.turns),
            ("copy_claims", self.claims),
            ("copy_exposures", self.exposures),
            ("copy_resolutions", self.resolutions),
            ("copy_events", self.events),
        ]

    def add(self, record: Record, plan: ImportPlan) -> UUID:
        thread, branch = uuid4(), uuid4()
        title = record.question if len(record.question) <= 300 else record.question[:299] + "…"
        self.threads.append((thread, title, record.question, plan.rule_set_id, plan.grouping_algorithm_id))
        self.branches.append((branch, thread, "main", "main"))
        tags = [*record.tags, f"file:{plan.file_name}"]
        self.imported.append((thread, plan.import_id, record.id, tags, record.labelled))
        version_of: dict[str, UUID] = {}
        option_set = uuid4()
        if len(record.propositions) > 1:  # one question's answers cannot both hold: one alternative set
            self.option_sets.append((option_set, thread, IMPORTED, plan.actor))
        for ordinal, (key, content) in enumerate(record.propositions):
            node, version = uuid4(), uuid4()
            if len(record.propositions) > 1:
                self.options.append((node, option_set, thread, key if record.labelled else None, ordinal))
            version_of[key] = version
            text = f"{key}: {content}" if record.labelled else content
            self.nodes.append((node, thread, branch))
            digest = hashlib.sha256(text.encode()).hexdigest()
            self.versions.append((version, node, thread, branch, 1, text, digest, "open"))
            self.propositions.append(
                (version, thread, key, ordinal, key if record.labelled else content, content)
            )
        models = {a.name: a for a in record.agents}
        run_of: dict[int, UUID] = {}
        claim_of: dict[int, tuple[UUID, UUID] | None] = {}
        last_of: dict[str, UUID] = {}
        for turn in record.turns:
            run = uuid4()
            run_of[turn.index] = run
            agent = models[turn.agent]
            model = agent.model or UNKNOWN
            provider = agent.provider or (provider_family(agent.model) if agent.model else UNKNOWN)
            seen_claims = [claim_of[i] for i in turn.saw if claim_of.get(i) is not None]
            features = sorted(f"stance:{claim}" for claim, _ in (c for c in seen_claims if c is not None))
            self.runs.append(
                (
                    run, thread, turn.agent, model, provider or UNKNOWN, False, last_of.get(turn.agent),
                    turn.round + 1, "imported", "succeeded", json.dumps(features), "now", "now",
                )
            )  # fmt: skip
            last_of[turn.agent] = run
            self.turns.append(
                (
                    run,
                    plan.import_id,
                    record.id,
                    turn.index,
                    turn.round,
                    turn.confidence,
                    turn.saw_given,
                    turn.text,
                )
            )
            confidence = 0.5 if turn.confidence is None else round(turn.confidence, 3)
            rationale = (turn.text or "")[:8_000]
            if turn.answer is not None:
                claim = uuid4()
                version = version_of[turn.answer]
                self.claims.append((claim, run, version, "endorse", confidence, rationale))
                claim_of[turn.index] = (claim, version)
                self._claim_event(thread, claim, run, version, "endorse", confidence, plan.actor)
            else:
                claim_of[turn.index] = None
                for version in version_of.values():
                    claim = uuid4()
                    self.claims.append((claim, run, version, "abstain", confidence, rationale))
                    self._claim_event(thread, claim, run, version, "abstain", confidence, plan.actor)
            channel = "explicit" if turn.saw_given else "previous_round"
            for index in turn.saw:
                seen = claim_of.get(index)
                self.exposures.append(
                    (
                        run,
                        "stance",
                        channel,
                        run_of[index],
                        seen[0] if seen else None,
                        seen[1] if seen else None,
                    )
                )
        source = f"import:{plan.file_name}"
        for key, version in version_of.items():
            if record.truth:
                reason = f"the recorded truth of record {record.id}"
                self.resolutions.append((version, thread, key in record.truth, source, reason, plan.actor))
        self.events.append(
            (
                thread, "thread.imported", str(thread), plan.actor,
                json.dumps({"import_id": str(plan.import_id), "record_id": record.id,
                            "file_sha256": plan.file_sha256, "turns": len(record.turns)}),
            )
        )  # fmt: skip
        return thread

    def _claim_event(
        self, thread: UUID, claim: UUID, run: UUID, version: UUID, kind: str, confidence: float, actor: str
    ) -> None:
        payload = {"run_id": str(run), "node_version_id": str(version), "claim_type": kind,
                   "confidence": confidence, "citations": 0}  # fmt: skip
        self.events.append((thread, "claim.added", str(claim), actor, json.dumps(payload)))


def add_resolution(
    conn: Connection, version_id: UUID, outcome: bool, source: str, reason: str, actor: str
) -> Resolved:
    """Append a resolution of ``version_id``; the row, with the one it superseded (if any)."""
    target = fetch_one(conn, "resolution_target", _Target, version_id=version_id)
    if target is None:
        from council.errors import NotFound

        raise NotFound(f"no node version {version_id}")
    previous = column(conn, "resolution_previous", UUID, version_id=version_id)
    [row] = fetch(
        conn, "resolution_insert", Row, version_id=version_id, thread_id=target.thread_id, outcome=outcome,
        source=source, reason=reason, actor=actor,
    )  # fmt: skip
    return Resolved.model_validate({**row, "supersedes": previous[0] if previous else None})


@dataclass(frozen=True, slots=True)
class _Target:
    id: UUID
    thread_id: UUID


def grouping_params(conn: Connection, grouping_id: str) -> dict[str, object]:
    [params] = column(conn, "grouping_params", dict, id=grouping_id)
    return dict(params)


# The rows `council eval` and `council export` read (council/sql/observation.sql): ids as
# text and confidences as float8, so nothing is converted again (10,000 records hold
# 120,000 runs). The service builds the domain's RecordFacts and Record from them.


@dataclass(frozen=True, slots=True)
class EvalRun:
    id: str
    thread_id: str
    agent: str
    provider: str
    model: str
    parent_run_id: str | None
    input_fingerprint: list[str]
    saw: list[str]  # whose stances the run had been shown
    cited: list[str]  # the evidence it cited
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: Decimal | None
    imported: bool
    stated_confidence: float | None
    control_of: str | None


@dataclass(frozen=True, slots=True)
class EvalClaim:
    run_id: str
    node_version_id: str
    claim_type: str
    confidence: float


@dataclass(frozen=True, slots=True)
class EvalExposure:
    run_id: str
    exposed_to_run_id: str


@dataclass(frozen=True, slots=True)
class EvalResolution:
    thread_id: str
    node_version_id: str
    outcome: bool


@dataclass(frozen=True, slots=True)
class EvalRows:
    """Everything `council eval` reads, for the resolved threads of the selection."""

    records: int  # the records the selection counted (resolved or not)
    threads: list[str]  # the resolved ones
    runs: list[EvalRun]
    claims: list[EvalClaim]
    resolutions: list[EvalResolution]
    alternatives: list[Link]
    alternative_versions: list[LinkedVersion]


def eval_rows(conn: Connection, thread_ids: Sequence[UUID] | None, tags: Sequence[str]) -> EvalRows:
    chosen, tagged = list(thread_ids or []), list(tags)
    [count] = column(conn, "eval_counts", int, thread_ids=chosen, tags=tagged)
    ids = column(conn, "eval_threads", str, thread_ids=chosen, tags=tagged)
    alternatives, scope = Alternatives(conn), [UUID(i) for i in ids]
    return EvalRows(
        records=count,
        threads=ids,
        runs=fetch(conn, "eval_runs", EvalRun, thread_ids=ids),
        claims=fetch(conn, "eval_claims", EvalClaim, thread_ids=ids),
        resolutions=fetch(conn, "eval_resolutions", EvalResolution, thread_ids=ids),
        alternatives=alternatives.links(scope),
        alternative_versions=alternatives.linked_versions(scope),
    )


@dataclass(frozen=True, slots=True)
class ExportThread:
    id: str
    objective: str
    record_id: str | None
    tags: list[str] | None
    labelled: bool


@dataclass(frozen=True, slots=True)
class ExportProposition:
    id: str
    content: str
    key: str | None
    label: str | None
    body: str | None


@dataclass(frozen=True, slots=True)
class ExportRun:
    id: str
    agent: str
    model: str
    provider: str
    round: int
    debate_round: int | None
    stated_confidence: float | None
    saw_given: bool | None
    turn_text: str | None
    imported: bool


@dataclass(frozen=True, slots=True)
class ExportRows:
    """Everything a thread's council-debate-v1 record is made of."""

    thread: ExportThread
    propositions: list[ExportProposition]
    runs: list[ExportRun]
    claims: list[EvalClaim]
    exposures: list[EvalExposure]
    resolutions: list[EvalResolution]


def export_rows(conn: Connection, thread_id: UUID) -> ExportRows:
    scope = [thread_id]
    [thread] = fetch(conn, "export_thread", ExportThread, thread_id=thread_id)
    return ExportRows(
        thread=thread,
        propositions=fetch(conn, "export_propositions", ExportProposition, thread_id=thread_id),
        runs=fetch(conn, "export_runs", ExportRun, thread_id=thread_id),
        claims=fetch(conn, "eval_claims", EvalClaim, thread_ids=scope),
        exposures=fetch(conn, "eval_exposures", EvalExposure, thread_ids=scope),
        resolutions=fetch(conn, "eval_resolutions", EvalResolution, thread_ids=scope),
    )
