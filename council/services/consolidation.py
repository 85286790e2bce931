"""Use cases of consolidation: decide node versions (the committer), plan the
commit queue's batches, and read groups, history, consolidations, replay and memory.

Deciding runs in batches, each one committer transaction (``Committer.decide``:
every node lock of the batch first, in key order, then set-based statements;
each version decided exactly as it would be alone). A batch closes once its
versions carry about ``CLAIMS_PER_TRANSACTION`` claims, so node locks are
never held long: light nodes go many at a time, heavy ones one or two. A
transaction that loses a race (deadlock, serialization failure, lock timeout,
or a unique violation when another committer won a node, which the next
attempt reads back) is retried whole here, in process and briefly: the one
retry policy's delays with ``COMMIT_RETRY``'s bounds, applied through tenacity.
"""

from __future__ import annotations

import random
import time
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, TypeVar
from uuid import UUID

import tenacity

from council import metrics
from council.domain.commands import IdRef
from council.domain.independence import GroupingParams, group_runs
from council.domain.manifests import same_section
from council.domain.results.consolidation import (
    ConsolidationShown,
    Evaluated,
    GroupShape,
    GroupsShown,
    GroupWithProviders,
    History,
    MemoryList,
    RecordedConsolidation,
    RecordedEvaluation,
    Replayed,
)
from council.domain.retry import RetryPolicy
from council.domain.rules import evaluate, group_dict, groups_of, recorded_n_eff, run_facts, support_n_eff
from council.domain.snapshot import manifest_of, snapshot_digests
from council.domain.validate import choice
from council.domain.vocabulary import MEMORY_STATUSES
from council.errors import Duplicate, NotFound, TransientDatabaseError
from council.services.ports import Tx, UnitOfWork

if TYPE_CHECKING:  # the committer is imported by the first transaction that decides
    from council.ledger.committer import NodeLockWait

# A transaction decides versions until their snapshots hold about this many claims.
CLAIMS_PER_TRANSACTION = 200
# At most this many versions per commit-queue message (one committer transaction); a
# message also closes at about CLAIMS_PER_TRANSACTION claims, so lightly claimed versions
# go many to a message, heavy ones alone, spread over workers (COUNCIL_EVALUATION_BATCH,
# default 50: ``EVALUATION_BATCH`` below, read from the settings when asked for).
# Races between committers resolve in milliseconds: retry the transaction at once, briefly.
COMMIT_RETRY = RetryPolicy(max_retries=5, base_s=0.1, cap_s=1.6)
# A batch's transactions, in turn, each for what the one before left (``_decide``).
NODE_LOCK_WAITS: tuple[NodeLockWait, ...] = ("try", "exclusive")


def __getattr__(name: str) -> int:
    """``EVALUATION_BATCH``: the settings' value when it is asked for, not at import."""
    if name == "EVALUATION_BATCH":
        from council.settings import settings

        return settings().evaluation_batch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _DryRun(Exception):
    """Raised inside the transaction to roll a dry run back with its results."""

    def __init__(self, results: dict[UUID, Evaluated]) -> None:
        self.results = results


def consolidate(uow: UnitOfWork, version: IdRef, *, actor: str, dry_run: bool = False) -> Evaluated:
    """Evaluate a node version under its thread's pinned rules and commit its
    consolidation if they allow (``--dry-run``: decide, write nothing)."""
    version_id = version
    if not isinstance(version_id, UUID):  # a whole id needs no transaction of its own
        with uow() as tx:
            version_id = tx.resolve("node version", version)
    return consolidate_many(uow, [version_id], actor=actor, dry_run=dry_run)[0]


def consolidate_many(
    uow: UnitOfWork, version_ids: Sequence[UUID], *, actor: str, dry_run: bool = False
) -> list[Evaluated]:
    """Decide node versions and commit what the rules allow; one result per id,
    in the order given. An unknown id is NotFound and nothing is written."""
    unique = list(dict.fromkeys(version_ids))
    batches = [unique]  # one version needs no planning: its transaction refuses it if unknown
    if len(unique) > 1:
        with uow() as tx:
            weights = tx.committer.weights(unique)
        missing = next((v for v in unique if v not in weights), None)
        if missing is not None:  # before any batch commits
            raise NotFound(f"no node version with id {missing}")
        batches = chunks(unique, weights, max_versions=None)
    results: dict[UUID, Evaluated] = {}
    for batch in batches:
        results.update((r.node_version_id, r) for r in _decide(uow, batch, actor, dry_run))
    return [results[v] for v in version_ids]


def plan_batches(uow: UnitOfWork, version_ids: Sequence[UUID], *, max_versions: int) -> list[list[UUID]]:
    """The versions in consecutive batches of one committer transaction each:
    about ``CLAIMS_PER_TRANSACTION`` claims and at most ``max_versions``
    versions. The commit queue sends one message per batch, so work is split
    by its weight: light nodes travel many to a message, heavy ones alone,
    where another worker can take the next. (An unknown version weighs
    nothing here; the committer refuses it.)"""
    unique = list(dict.fromkeys(version_ids))
    if len(unique) <= 1:  # one message whatever it weighs: no transaction (most runs touch one)
        return [unique] if unique else []
    with uow() as tx:
        weights = tx.committer.weights(unique)
    return chunks(unique, weights, max_versions=max_versions)


def chunks(
    version_ids: list[UUID], weights: dict[UUID, int], *, max_versions: int | None
) -> list[list[UUID]]:
    """Consecutive runs of versions whose claims add up to the transaction budget."""
    planned: list[list[UUID]] = []
    load = 0
    for version_id in version_ids:
        weight = weights.get(version_id, 0)
        full = bool(planned) and (
            load + weight > CLAIMS_PER_TRANSACTION
            or (max_versions is not None and len(planned[-1]) >= max_versions)
        )
        if not planned or full:
            planned.append([])
            load = 0
        planned[-1].append(version_id)
        load += weight
    return planned


def _decide(uow: UnitOfWork, batch: list[UUID], actor: str, dry_run: bool) -> list[Evaluated]:
    """Decide a batch in one transaction, or two, so evaluators of one node never queue
    for its lock one behind another: the versions whose node lock is free are decided at
    once; a node another committer is deciding now is waited for with a shared lock,
    beside every other waiter, and a repeat of what it decided is answered then; only a
    version still undecided after that waits, in a second transaction, for the exclusive lock."""
    started = time.monotonic()
    results: dict[UUID, Evaluated] = {}
    pending = batch
    for wait in NODE_LOCK_WAITS:
        results.update(_transaction(uow, pending, actor, dry_run, wait))
        pending = [v for v in pending if v not in results]
        if not pending:
            break
    if not dry_run:  # a dry run is not a commit
        elapsed = time.monotonic() - started
        for result in results.values():
            metrics.observe_commit(result.outcome, elapsed)
    return [results[v] for v in batch]


def _transaction(
    uow: UnitOfWork, batch: list[UUID], actor: str, dry_run: bool, wait: NodeLockWait
) -> dict[UUID, Evaluated]:
    """One committer transaction, retried whole when it loses a race (``COMMIT_RETRY``)."""
    for attempt in _commit_retrying():
        with attempt:
            try:
                with uow() as tx:
                    results = tx.committer.decide(batch, actor=actor, dry_run=dry_run, wait=wait)
                    if dry_run:
                        raise _DryRun(results)
                return results
            except _DryRun as done:
                return done.results
    raise AssertionError("tenacity ends a retry loop by returning or raising")  # pragma: no cover


def _commit_retrying() -> tenacity.Retrying:
    """The one retry policy's delays (full-jitter exponential backoff, ``RetryPolicy.delay``)
    with ``COMMIT_RETRY``'s bounds, applied in process by tenacity to a lost race: at most
    ``max_retries`` retries, then the race's own error is raised."""
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception_type((TransientDatabaseError, Duplicate)),
        stop=tenacity.stop_after_attempt(COMMIT_RETRY.max_retries + 1),
        wait=lambda state: COMMIT_RETRY.delay(state.attempt_number - 1, random.random()) or 0.0,  # noqa: S311
        before_sleep=lambda _state: metrics.count_retry("commit_transaction"),
        reraise=True,
    )


def groups(uow: UnitOfWork, version: IdRef) -> GroupsShown:
    """The independence groups of a node version's claiming runs, as of now."""
    with uow() as tx:
        version_id = tx.resolve("node version", version)
        snapshot = tx.consolidations.current_snapshot(version_id)
    found = groups_of(snapshot)
    providers = {r["id"]: r["provider"] for r in snapshot["runs"]}
    return GroupsShown(
        node_version_id=version_id,
        grouping_algorithm_id=snapshot["grouping"]["id"],
        claims=len(snapshot["claims"]),
        groups=[
            GroupWithProviders(**group_dict(g), run_providers={r: providers[r] for r in g.runs})
            for g in found
        ],
        support_groups=sum(1 for g in found if g.kind == "support"),
        dispute_groups=sum(1 for g in found if g.kind == "dispute"),
        n_eff=support_n_eff(snapshot, found),
    )


def history(uow: UnitOfWork, version: IdRef) -> History:
    """Every consolidation and recorded evaluation of the version's logical node, with reasons."""
    with uow() as tx:
        found = tx.consolidations.history(tx.resolve("node version", version))
    return found.model_copy(
        update={
            "consolidations": [_with_n_eff(c) for c in found.consolidations],
            "evaluations": [_with_n_eff(e) for e in found.evaluations],
        }
    )


_Recorded = TypeVar("_Recorded", RecordedConsolidation, RecordedEvaluation)


def _with_n_eff(item: _Recorded) -> _Recorded:
    """A recorded decision with the n_eff its effective_support reason states (None without one)."""
    return item.model_copy(update={"n_eff": recorded_n_eff(r.model_dump() for r in item.reasons)})


def show_consolidation(uow: UnitOfWork, consolidation: IdRef) -> ConsolidationShown:
    with uow() as tx:
        return tx.consolidations.show(tx.resolve("consolidation", consolidation))


def replay(uow: UnitOfWork, record: IdRef) -> Replayed:
    """Rebuild a consolidation (or a recorded not-ready evaluation) from the rows
    it names and recompute its decision with the pinned rule set and grouping
    (invariant 9). Timestamps play no part: commit order is not timestamp order."""
    with uow() as tx:
        record_id = _record_id(tx, record)
        kind, row = tx.consolidations.record(record_id)
        stored = row["snapshot"]
        if stored is not None:
            stored_hash, stored_sections = snapshot_digests(stored)
            named = manifest_of(stored)
        else:  # a not-ready evaluation since revision 0005: its manifest and section hashes
            stored_hash, stored_sections = row["snapshot_sha256"], row["section_sha256"]
            named = row["manifest"]
        rebuilt = tx.consolidations.rebuild(named)
    stored_outcome = "consolidate" if kind == "consolidation" else row["outcome"]
    stored_reasons = row["decision"]["reasons"] if kind == "consolidation" else row["reasons"]
    decision = evaluate(rebuilt).as_dict()
    rebuilt_hash, rebuilt_sections = snapshot_digests(rebuilt)
    hash_match = rebuilt_hash == row["snapshot_sha256"] == stored_hash
    decision_match = (
        decision["outcome"] == stored_outcome
        and decision["reasons"] == stored_reasons
        and (kind == "evaluation" or decision["groups"] == row["decision"]["groups"])
    )
    pinned_match = (rebuilt["rule_set"]["id"], rebuilt["grouping"]["id"]) == (
        row["rule_set_id"],
        row["grouping_algorithm_id"],
    )
    return Replayed(
        id=record_id,
        kind=kind,
        match=hash_match and decision_match and pinned_match,
        snapshot_sha256=row["snapshot_sha256"],
        replayed_sha256=rebuilt_hash,
        hash_match=hash_match,
        decision_match=decision_match,
        stored_outcome=stored_outcome,
        replayed_outcome=decision["outcome"],
        rule_set_id=row["rule_set_id"],
        grouping_algorithm_id=row["grouping_algorithm_id"],
        differences=sorted(
            k
            for k in stored_sections.keys() | rebuilt_sections.keys()
            if not same_section(stored_sections.get(k), rebuilt_sections.get(k))
        ),
    )


def _record_id(tx: Tx, record: IdRef) -> UUID:
    """A consolidation or an evaluation id (either table may hold a prefix)."""
    try:
        return tx.resolve("consolidation", record)
    except NotFound:
        try:
            return tx.resolve("evaluation", record)
        except NotFound:
            raise NotFound(f"no consolidation or evaluation with id {record}") from None


def memory_list(uow: UnitOfWork, *, status: str | None = None, thread: IdRef | None = None) -> MemoryList:
    """Memory items with their transition history (stable, provisional, contested, …)."""
    if status is not None:
        choice(status, "memory status", MEMORY_STATUSES)
    with uow() as tx:
        thread_id = None
        if thread is not None:
            thread_id = tx.resolve("thread", thread)
            tx.threads.get(thread_id)
        return MemoryList(items=tx.consolidations.memory(status=status, thread_id=thread_id), status=status)


def groups_among(uow: UnitOfWork, version: IdRef, runs: Collection[str] | None = None) -> list[GroupShape]:
    """The independence groups of a node version's claiming runs now, among
    ``runs`` only when given (e.g. the groups as they stood after a round)."""
    with uow() as tx:
        snapshot = tx.consolidations.current_snapshot(tx.resolve("node version", version))
    facts = [f for f in run_facts(snapshot) if runs is None or f.run_id in runs]
    found = group_runs(facts, GroupingParams.from_record(snapshot["grouping"]["params"]))
    return [GroupShape(**group_dict(g)) for g in found]
