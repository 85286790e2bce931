"""Use cases of counterfactual replay (docs/architecture.md §12): decide every
stored decision again under another rule set, and store a rule set with the
report that motivated it, pinned for new threads.

Replay writes nothing: read-only transactions rebuild the stored snapshots
set-based, ``REBUILD_CHUNK`` decisions per statement (the next chunk read while
this one is decided), and the pure evaluation (``council/domain/rules.py``)
decides each twice in memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from uuid import UUID

from council.domain.canonical import canonical_sha256
from council.domain.commands import IdRef
from council.domain.counterfactual import Redecided, RuleSet, StoredDecision, parse_rule_set, redecide
from council.domain.results.learning import (
    ChangedDecision,
    Counterfactual,
    RuleSetList,
    RuleSetShown,
    RuleSetStored,
)
from council.domain.snapshot import Snapshot
from council.errors import BadInput
from council.services.ports import Tx, UnitOfWork

# Stored decisions rebuilt per statement: large enough to amortise the round trip,
# small enough that one statement's arrays stay modest.
REBUILD_CHUNK = 500


def counterfactual(
    uow: UnitOfWork,
    rule_set: Mapping[str, object] | str,
    *,
    thread: IdRef | None = None,
    since: datetime | None = None,
) -> Counterfactual:
    """Every stored decision (of ``thread``, recorded at or after ``since``) decided
    again under ``rule_set`` — a rule-set document (docs/guide/learning.md) or a stored rule
    set's id — and the ones that would change, with each rule's reasons."""
    with uow() as tx:
        candidate = _candidate(tx, rule_set)
        thread_id = None
        if thread is not None:
            thread_id = tx.resolve("thread", thread)
            tx.threads.get(thread_id)
        stored = tx.consolidations.stored_decisions(thread_id=thread_id, since=since)
    chunks = [stored[start : start + REBUILD_CHUNK] for start in range(0, len(stored), REBUILD_CHUNK)]
    changed: list[ChangedDecision] = []
    not_reproduced: list[UUID] = []
    # The next chunk is read while this one is decided: reading waits on the server,
    # deciding on the processor. Each read is its own transaction, which is safe
    # because every row a stored decision names is immutable.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="counterfactual-read") as reader:
        pending = reader.submit(_rebuilt, uow, chunks[0]) if chunks else None
        for index, chunk in enumerate(chunks):
            assert pending is not None
            snapshots = pending.result()
            pending = reader.submit(_rebuilt, uow, chunks[index + 1]) if index + 1 < len(chunks) else None
            for (decision_thread, decision), snapshot in zip(chunk, snapshots, strict=True):
                again = redecide(decision, snapshot, candidate)
                if not again.reproduced:
                    not_reproduced.append(UUID(decision.id))
                elif again.changed:
                    changed.append(_changed(decision_thread, decision, again))
    report = Counterfactual(
        rule_set_id=candidate.id,
        rule_set_sha256=candidate.sha256,
        body=candidate.body,
        thread_id=thread_id,
        since=since,
        compared=len(stored),
        reproduced=len(stored) - len(not_reproduced),
        changed=changed,
        not_reproduced=not_reproduced,
        report_sha256="0" * 64,
    )
    return report.model_copy(update={"report_sha256": report_digest(report.json_document())})


def _rebuilt(uow: UnitOfWork, chunk: list[tuple[UUID, StoredDecision]]) -> list[Snapshot]:
    """The snapshots of a chunk of stored decisions, rebuilt from the rows they name."""
    with uow() as tx:
        named = tx.consolidations.manifests([UUID(d.id) for _, d in chunk])
        return tx.consolidations.rebuild_many([named[UUID(d.id)] for _, d in chunk])


def report_digest(document: Mapping[str, object]) -> str:
    """The digest of a counterfactual report: of its JSON document without the digest."""
    return canonical_sha256({k: v for k, v in document.items() if k != "report_sha256"})


def _candidate(tx: Tx, rule_set: Mapping[str, object] | str) -> RuleSet:
    return tx.rule_sets.get(rule_set) if isinstance(rule_set, str) else parse_rule_set(rule_set)


def _changed(thread_id: UUID, decision: StoredDecision, again: Redecided) -> ChangedDecision:
    return ChangedDecision.model_validate(
        {
            "id": decision.id,
            "kind": decision.kind,
            "node_version_id": decision.node_version_id,
            "thread_id": thread_id,
            "stored_outcome": decision.outcome,
            "counterfactual_outcome": again.candidate.outcome,
            "rules_changed": again.rules_changed(),
            "stored_reasons": [r.as_dict() for r in again.pinned.reasons],
            "counterfactual_reasons": [r.as_dict() for r in again.candidate.reasons],
        }
    )


def store_rule_set(
    uow: UnitOfWork,
    document: Mapping[str, object],
    *,
    report: Mapping[str, object] | None,
    pin: bool,
    actor: str,
) -> RuleSetStored:
    """Store a rule set (the file format of docs/guide/learning.md) with the counterfactual report that
    motivated it, and pin it for new threads when asked. The report must be the
    unaltered output of ``council replay --rule-set`` for this same rule set."""
    rule_set = parse_rule_set(document)
    provenance = None if report is None else _provenance(rule_set, report)
    with uow() as tx:
        created = tx.rule_sets.add(rule_set, provenance=provenance, actor=actor)
        if pin:
            tx.rule_sets.pin(rule_set.id, actor=actor)
        return RuleSetStored(rule_set=tx.rule_sets.show(rule_set.id), created=created)


def _provenance(rule_set: RuleSet, report: Mapping[str, object]) -> dict[str, object]:
    try:
        parsed = Counterfactual.model_validate(report)
    except ValueError:
        raise BadInput(
            "the report is not a counterfactual report (council replay --rule-set --json)"
        ) from None
    if report_digest(parsed.json_document()) != parsed.report_sha256:
        raise BadInput("the report's report_sha256 does not match its content: it was altered")
    if parsed.rule_set_sha256 != rule_set.sha256:
        raise BadInput(f"the report replayed another rule set ({parsed.rule_set_id}), not {rule_set.id}")
    return {
        "report_sha256": parsed.report_sha256,
        "thread_id": parsed.thread_id,
        "since": parsed.since,
        "compared": parsed.compared,
        "changed": [str(c.id) for c in parsed.changed],
    }


def pin_rule_set(uow: UnitOfWork, rule_set_id: str, *, actor: str) -> RuleSetShown:
    """Pin new threads to a stored rule set (threads already open keep theirs)."""
    with uow() as tx:
        tx.rule_sets.pin(rule_set_id, actor=actor)
        return tx.rule_sets.show(rule_set_id)


def list_rule_sets(uow: UnitOfWork) -> RuleSetList:
    with uow() as tx:
        return RuleSetList(rule_sets=tx.rule_sets.all(), pinned_for_new_threads=tx.rule_sets.pinned())
