"""Use cases of observing real disagreement (docs/guide/observe.md): import recorded debates, resolve a
node against an outside fact, and measure what a council added (`council eval`).

An import is validated whole before anything is written (a bad record refuses the file,
naming the record), then written in one transaction; the same file again writes nothing.
`eval` writes nothing: it reads the resolved threads and computes every figure in
:mod:`council.domain.observation`.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from uuid import uuid4

from council.domain import validate as v
from council.domain.alternatives import components
from council.domain.commands import IdRef
from council.domain.counterfactual import parse_rule_set
from council.domain.debates import (
    FORMATS,
    Agent,
    BadRecord,
    Format,
    Record,
    Turn,
    parse_file,
    record_document,
)
from council.domain.observation import (
    SUPPORT,
    Claim,
    RecordFacts,
    RuleSetUnderTest,
    TurnFacts,
    evaluate_records,
)
from council.domain.results.observation import DebateExport, EvalReport, Imported, Resolved
from council.errors import BadInput
from council.ledger import observation as store
from council.ledger.alternatives import Link, LinkedVersion
from council.ledger.observation import ImportPlan, Progress
from council.ledger.threads import DEFAULT_GROUPING
from council.services.ports import UnitOfWork

MAX_FILE_BYTES = 512 * 1024 * 1024


def import_debates(
    uow: UnitOfWork,
    data: bytes,
    *,
    file_name: str,
    fmt: str = "council-debate-v1",
    answer_pattern: str | None = None,
    numeric: bool = False,
    model: str | None = None,
    provider: str | None = None,
    actor: str,
    progress: Progress | None = None,
) -> Imported:
    """Import a recorded-debate file (`council-debate-v1` or `du-debate`)."""
    v.choice(fmt, "--format", FORMATS)
    if len(data) > MAX_FILE_BYTES:
        raise BadInput(f"the file is {len(data)} bytes (limit {MAX_FILE_BYTES})")
    model = None if model is None else v.text(model, "--model", 200)
    provider = None if provider is None else v.text(provider, "--provider", v.MAX_NAME)
    digest = hashlib.sha256(data).hexdigest()
    try:
        records = parse_file(
            data, _format(fmt), answer_pattern=answer_pattern, numeric=numeric, model=model, provider=provider
        )
    except BadRecord as exc:
        raise BadInput(f"refused the whole file: {exc}") from None
    name = v.text(file_name, "file name", v.MAX_NAME * 2)
    with uow() as tx:
        earlier = store.find_import(tx.conn, digest)
        if earlier is not None:
            return Imported(
                import_id=earlier.id,
                file_sha256=digest,
                format=earlier.format,
                file_name=earlier.file_name,
                records=earlier.records,
                turns=earlier.turns,
                created=False,
                thread_ids=[],
            )
        plan = ImportPlan(
            import_id=uuid4(),
            file_sha256=digest,
            fmt=fmt,
            file_name=name,
            actor=actor,
            rule_set_id=tx.rule_sets.exclusive(),  # a record's answers are rival alternatives
            grouping_algorithm_id=DEFAULT_GROUPING,
        )
        threads = store.write_import(tx.conn, plan, records, progress)
    return Imported(
        import_id=plan.import_id,
        file_sha256=digest,
        format=fmt,
        file_name=name,
        records=len(records),
        turns=sum(len(r.turns) for r in records),
        created=True,
        thread_ids=threads,
    )


def _format(fmt: str) -> Format:
    return "du-debate" if fmt == "du-debate" else "council-debate-v1"


def resolve(uow: UnitOfWork, node: IdRef, *, outcome: str, source: str, reason: str, actor: str) -> Resolved:
    """Append an outside fact deciding a node version true or false; a later one supersedes it."""
    truth = {"true": True, "false": False}.get(outcome.strip().lower())
    if truth is None:
        raise BadInput(f"invalid --outcome: {outcome!r} (expected true or false)")
    source = v.text(source, "source", 500)
    reason = v.text(reason, "reason", v.MAX_REASON)
    with uow() as tx:
        version_id = tx.resolve("node version", node)
        resolved = store.add_resolution(tx.conn, version_id, truth, source, reason, actor)
        tx.events.append(
            "node.resolved",
            actor=actor,
            thread_id=resolved.thread_id,
            subject_id=version_id,
            payload={"resolution_id": str(resolved.id), "outcome": truth, "source": source,
                     "supersedes": None if resolved.supersedes is None else str(resolved.supersedes)},
        )  # fmt: skip
        return resolved


def evaluate(
    uow: UnitOfWork,
    *,
    threads: Sequence[IdRef] = (),
    tags: Sequence[str] = (),
    rule_sets: Sequence[dict[str, object] | str] = (),
) -> EvalReport:
    """Every figure of docs/guide/observe.md over the resolved threads selected; nothing is written.
    ``rule_sets``: documents or stored ids (default: the rule set pinned for new threads)."""
    with _no_cycle_collection():
        with uow() as tx:
            thread_ids = [tx.resolve("thread", t) for t in threads]
            chosen = [tx.rule_sets.pinned()] if not rule_sets else list(rule_sets)
            under_test = []
            for ref in chosen:
                rule_set = tx.rule_sets.get(ref) if isinstance(ref, str) else parse_rule_set(ref)
                under_test.append(RuleSetUnderTest(rule_set.id, rule_set.body))
            if len({r.id for r in under_test}) != len(under_test):
                raise BadInput("the same rule set is named twice")
            grouping = store.grouping_params(tx.conn, DEFAULT_GROUPING)
            rows = store.eval_rows(tx.conn, thread_ids, [str(t) for t in tags])
        report = evaluate_records(_records(rows), under_test, grouping)
    return EvalReport.model_validate({**report, "rule_sets": [r.id for r in under_test]})


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The cyclic garbage collector paused while `eval` reads and measures: 10,000 records
    are about a million rows, tuples and sets alive at once, none of them in a cycle, and
    each full collection walks them all (a third of the evaluation's CPU, measured). It
    resumes as it was; reference counting frees everything as usual meanwhile."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _records(rows: store.EvalRows) -> list[RecordFacts]:
    """The facts of each selected record. Ids arrive as text and confidences as float8
    (council/sql/observation.sql), so nothing is converted again here: 10,000 records
    hold 120,000 runs."""
    claims_of: dict[str, list[Claim]] = {}
    best_of: dict[str, tuple[float, str]] = {}  # the highest-confidence support (ties: greatest id)
    for c in rows.claims:
        run_id, node, kind, confidence = c.run_id, c.node_version_id, c.claim_type, c.confidence
        claims_of.setdefault(run_id, []).append(Claim(run_id, node, kind, confidence))
        if kind in SUPPORT:
            candidate = (confidence, node)
            held = best_of.get(run_id)
            if held is None or candidate > held:
                best_of[run_id] = candidate
    truth: dict[str, dict[str, bool]] = {}
    for r in rows.resolutions:
        truth.setdefault(r.thread_id, {})[r.node_version_id] = r.outcome
    turns: dict[str, list[TurnFacts]] = {}
    claims: dict[str, list[Claim]] = {}
    no_set: frozenset[str] = frozenset()
    # A control run is no turn and its claims are no support: only its answer is read, beside its run's.
    control_answers = {
        run.control_of: best[1]
        for run in rows.runs
        if run.control_of is not None and (best := best_of.get(run.id)) is not None
    }
    for run in rows.runs:
        run_id, thread_id = run.id, run.thread_id
        if run.control_of is not None:
            continue
        best = best_of.get(run_id)
        # An imported turn's confidence is the one it stated, if any (its claim's default 0.5 is not).
        stated = run.stated_confidence if run.imported else (None if best is None else best[0])
        turns.setdefault(thread_id, []).append(
            TurnFacts(
                run_id=run_id,
                agent=run.agent,
                provider=run.provider,
                answer=None if best is None else best[1],
                confidence=None if best is None or stated is None else float(stated),
                saw=tuple(run.saw),
                parent_run_id=run.parent_run_id,
                input_features=frozenset(run.input_fingerprint) if run.input_fingerprint else no_set,
                cited=frozenset(run.cited) if run.cited else no_set,
                prompt_tokens=run.prompt_tokens,
                completion_tokens=run.completion_tokens,
                usd=None if run.cost_usd is None else float(run.cost_usd),
                model=run.model,
                control_answer=control_answers.get(run_id),
            )
        )
        own = claims_of.get(run_id)
        if own:
            claims.setdefault(thread_id, []).extend(own)
    rivals = _rivals(rows.alternatives, rows.alternative_versions)
    # Records the selection counted but that have no resolution are counted, not measured.
    resolved = [
        RecordFacts(
            str(t), truth.get(t, {}), tuple(turns.get(t, ())), tuple(claims.get(t, ())), rivals.get(t, {})
        )
        for t in rows.threads
    ]
    unresolved = [RecordFacts(f"unresolved-{i}", {}, ()) for i in range(rows.records - len(resolved))]
    return resolved + unresolved


def _rivals(links: Sequence[Link], versions: Sequence[LinkedVersion]) -> dict[str, dict[str, frozenset[str]]]:
    """Per thread, each linked node version's rival versions: those of the other logical
    nodes of its alternative set (docs/architecture.md §4; a revision is no rival of its node)."""
    by_thread: dict[str, list[Link]] = {}
    for link in links:
        by_thread.setdefault(link.thread_id, []).append(link)
    versions_of: dict[str, dict[str, list[str]]] = {}
    for linked in versions:
        versions_of.setdefault(linked.thread_id, {}).setdefault(linked.logical_node_id, []).append(
            linked.version_id
        )
    found: dict[str, dict[str, frozenset[str]]] = {}
    for thread, thread_links in by_thread.items():
        nodes = versions_of.get(thread, {})
        rivals: dict[str, frozenset[str]] = {}
        one_question = (
            {link.b for link in thread_links}
            if all(link.ordinal is not None for link in thread_links)
            else ()
        )
        if len(one_question) == 1:  # an imported record or an asked question: its options, no edge
            sets = [frozenset(link.a for link in thread_links)]
        else:
            sets = components(((link.a, link.b) for link in thread_links), nodes)
        for group in sets:
            for node in group:
                others = frozenset(v for other in group if other != node for v in nodes[other])
                for version in nodes[node]:
                    rivals[version] = others
        found[thread] = rivals
    return found


def export_debate(uow: UnitOfWork, thread: IdRef) -> DebateExport:
    """A thread as one council-debate-v1 record: an imported one as it came (parsing the
    export gives the imported record back); any other thread whose runs answer its nodes,
    with each head version as an option labelled by its short id."""
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        rows = store.export_rows(tx.conn, thread_id)
    record = _export_record(rows)
    if not record.turns:
        raise BadInput(f"thread {thread_id} has no runs to export as a debate")
    return DebateExport(record=record_document(record))


def _export_record(rows: store.ExportRows) -> Record:
    thread = rows.thread
    keys: dict[str, str] = {}
    propositions: list[tuple[str, str]] = []
    labelled = thread.labelled
    for p in rows.propositions:
        if p.key is not None and p.body is not None:
            keys[p.id] = p.key
            propositions.append((p.key, p.body))
        else:
            keys[p.id] = p.id[:8]
            propositions.append((p.id[:8], p.content))
    best: dict[str, tuple[float, str]] = {}
    for c in rows.claims:
        if c.claim_type in ("endorse", "originate") and c.node_version_id in keys:
            candidate = (c.confidence, c.node_version_id)
            best[c.run_id] = max(best.get(c.run_id, candidate), candidate)
    index = {run.id: i for i, run in enumerate(rows.runs)}
    saw: dict[str, list[int]] = {}
    for e in rows.exposures:
        if e.exposed_to_run_id in index:
            saw.setdefault(e.run_id, []).append(index[e.exposed_to_run_id])
    agents: dict[str, Agent] = {}
    turns = []
    for i, run in enumerate(rows.runs):
        agents.setdefault(run.agent, Agent(run.agent, run.model, run.provider))
        chosen = best.get(run.id)
        confidence = run.stated_confidence if run.imported else (None if chosen is None else chosen[0])
        given = bool(run.saw_given) if run.imported else True
        debate_round = run.debate_round if run.imported and run.debate_round is not None else run.round - 1
        turns.append(
            Turn(
                index=i,
                round=debate_round,
                agent=run.agent,
                answer=None if chosen is None else keys[chosen[1]],
                confidence=confidence,
                text=run.turn_text,
                saw=tuple(sorted(saw.get(run.id, ()))),
                saw_given=given,
            )
        )
    truth = frozenset(
        keys[r.node_version_id] for r in rows.resolutions if r.outcome and r.node_version_id in keys
    )
    tags = tuple(t for t in (thread.tags or []) if not t.startswith("file:"))
    return Record(
        id=thread.record_id or thread.id,
        question=thread.objective,
        propositions=tuple(propositions),
        truth=truth,
        agents=tuple(agents.values()),
        turns=tuple(turns),
        tags=tags,
        labelled=labelled,
    )
