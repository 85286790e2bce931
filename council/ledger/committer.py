"""The consolidation committer: exactly one live consolidation per logical node
(invariant 8), under any concurrency, retry, redelivery or crash (docs/architecture.md §4).

One transaction at READ COMMITTED; the logical node's transaction-scoped
advisory lock; then "already live for this version?", then idempotency (same
version + same snapshot hash → the existing result), then evaluate and write.
The partial unique index ``consolidations_one_live_per_node`` backs the lock.
How the lock is waited for is the caller's choice (``NodeLockWait``): the
service first takes the free locks and waits for a held one with a shared
lock, under which a repeat of what the holder decided is answered, and only
then waits for the exclusive lock, so evaluators of one node do not queue
behind each other one at a time.

A transaction may decide a batch of versions (a commit-queue message is one,
planned by weight by ``council.services.consolidation.plan_batches``): every node lock is taken first, in
key order, and each statement after that serves the whole batch — one loads every snapshot, one
writes every consolidation — so a batch costs about as many round trips as
one version. Each version is decided exactly as it would be alone. A batch
closes once its versions carry about ``CLAIMS_PER_TRANSACTION`` claims (the service plans
it), so locks
on heavily claimed nodes are held as briefly as before batching.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, TypedDict
from uuid import UUID

from council import metrics
from council.domain import chain_codec
from council.domain.alternatives import one_per_set
from council.domain.jsonvalue import JsonObject
from council.domain.results.consolidation import Evaluated, GroupShape, RuleReason
from council.domain.rules import Decision, ReasonDict, evaluate, group_dict
from council.domain.snapshot import Snapshot, manifest_of, snapshot_digests, support_evidence
from council.domain.vocabulary import CONSOLIDATION_OUTCOMES
from council.errors import CouncilError, NotFound
from council.ledger import evaluation_chains, events
from council.ledger.committer_rows import (
    BatchVersion,
    Begun,
    Decided,
    LiveAndLocked,
    LiveConsolidation,
    MemoryState,
    NotReady,
    Weight,
    Written,
)
from council.ledger.pg import execute, fetch
from council.ledger.snapshots import locked_snapshots

if TYPE_CHECKING:  # events.append takes it until the events store runs named SQL
    from council.ledger.pg import Connection

LOCK_TIMEOUT = "10s"
STATEMENT_TIMEOUT = "60s"

COMMITTED, ALREADY, NOT_READY, WOULD_COMMIT = CONSOLIDATION_OUTCOMES


# How commit_begin takes a batch's node locks (see its comment in council/sql/committer.sql).
NodeLockWait = Literal["try", "exclusive"]
EXCLUSIVE: NodeLockWait = "exclusive"


class Committer:
    """The committer's statements over one transaction (the service owns the
    transaction, its retries and the batching; see council.services.consolidation)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def decide(
        self, version_ids: list[UUID], *, actor: str, dry_run: bool, wait: NodeLockWait = EXCLUSIVE
    ) -> dict[UUID, Evaluated]:
        """Decide each version as a lone committer would, under its node lock, and
        write the outcomes (nothing is written for a dry run, whose caller rolls
        the transaction back). ``wait`` says which versions are answered (the
        others are absent): ``exclusive`` all of them, each node lock waited for;
        ``try`` those whose node lock is free now, and of the others only repeats
        of a version already live, read once whoever holds its lock is done."""
        return _consolidate_batch(self._conn, version_ids, actor=actor, dry_run=dry_run, wait=wait)

    def weights(self, version_ids: Sequence[UUID]) -> dict[UUID, int]:
        """The claims on each version that exists (one read, before any lock)."""
        if not version_ids:
            return {}
        rows = fetch(self._conn, "commit_weights", Weight, version_ids=list(version_ids))
        return {row.id: int(row.claims) for row in rows}


def _consolidate_batch(
    conn: Connection, version_ids: list[UUID], *, actor: str, dry_run: bool, wait: NodeLockWait = EXCLUSIVE
) -> dict[UUID, Evaluated]:
    with metrics.lock_wait("node"):
        begun = fetch(
            conn,
            "commit_begin",
            Begun,
            version_ids=version_ids,
            wait=wait,
            lock_timeout=LOCK_TIMEOUT,
            statement_timeout=STATEMENT_TIMEOUT,
        )
    if begun[0].isolation != "read committed":
        # At a higher level the snapshot would predate the lock wait: stale.
        raise CouncilError(f"the committer needs READ COMMITTED, got {begun[0].isolation}")
    found = {
        row.id: BatchVersion(row.id, row.logical_node_id, row.thread_id, row.content, row.locked, row.live)
        for row in begun
        if row.id is not None
    }
    missing = next((v for v in version_ids if v not in found), None)
    if missing is not None:
        raise NotFound(f"no node version with id {missing}")
    # A node `try` found held was waited for with a shared lock: that decides nothing, it
    # answers a repeat of what the holder decided (the rest is left for the exclusive lock).
    results: dict[UUID, Evaluated] = {}
    for v in dict.fromkeys(version_ids):
        repeat = None if found[v].locked else _repeat(found[v], found[v].live, dry_run)
        if repeat is not None:
            results[v] = repeat
    # Now under the node locks: every statement from here sees what committed before it.
    # Versions of one logical node are decided in turn (one per node per round), so a
    # round writes at most one live consolidation per node and sees the round before; so
    # are rival alternatives a round would both consolidate (``one_per_set``).
    held = [v for v in version_ids if found[v].locked]
    pending = held
    while pending:
        nodes: set[UUID] = set()
        this_round: list[BatchVersion] = []
        later: list[UUID] = []
        for version_id in pending:
            row = found[version_id]
            if row.logical_node_id in nodes:
                later.append(version_id)
            else:
                nodes.add(row.logical_node_id)
                this_round.append(row)
        # The first round knows each node's live consolidation from commit_begin (read after
        # its lock); a later one reads it again, after the round before it wrote.
        first = pending is held
        decided, deferred = _decide(conn, this_round, actor=actor, dry_run=dry_run, fresh=first)
        results.update(decided)
        pending = later + deferred
    return results


def _repeat(version: BatchVersion, live: LiveConsolidation | None, dry_run: bool) -> Evaluated | None:
    """The answer to a version already live (its node's live consolidation ``live``), else None."""
    if live is None or live["node_version_id"] != str(version.id):
        return None
    # Idempotent at the version level: committing changes the version's
    # status, so a repeat sees a new snapshot hash but must get the same row.
    return Evaluated(
        **_base(version, dry_run),
        snapshot_sha256=live["snapshot_sha256"],
        outcome=ALREADY,
        consolidation_id=UUID(live["id"]),
        reasons=_stored_reasons(live["reasons"]),
    )


def _decide(
    conn: Connection, versions: list[BatchVersion], *, actor: str, dry_run: bool, fresh: bool
) -> tuple[dict[UUID, Evaluated], list[UUID]]:
    """One round: versions of distinct logical nodes, their node locks held (``fresh``: each
    version row's ``live`` was read after its lock and nothing has been written since).
    Returns the results and the versions left for the next round (a rival of one this round
    consolidates: decided again once it is written, it sees it live)."""
    state = _live(conn, versions) if not fresh else None
    results: dict[UUID, Evaluated] = {}
    todo = []
    for version in versions:
        live = version.live if state is None else state.live.get(str(version.logical_node_id))
        repeat = _repeat(version, live, dry_run)
        if repeat is not None:
            results[version.id] = repeat
        else:
            todo.append(version)
    if not todo:
        return results, []
    if state is None:
        state = _live(conn, todo)

    snapshots = locked_snapshots(conn, [v.id for v in todo], locked={str(e) for e in state.locked})
    hashed = {v.id: snapshot_digests(snapshots[v.id]) for v in todo}
    digests = {version_id: digest for version_id, (digest, _) in hashed.items()}
    decided = {
        row.version_id: row
        for row in fetch(
            conn,
            "commit_decided",
            Decided,
            decided=json.dumps([{"version_id": str(v.id), "digest": digests[v.id]} for v in todo]),
        )
    }
    positive: list[tuple[BatchVersion, Decision]] = []
    negative: list[tuple[BatchVersion, Decision]] = []
    for version in todo:
        base, digest = _base(version, dry_run), digests[version.id]
        known = decided[version.id]
        if known.consolidation is not None:
            results[version.id] = Evaluated(
                **base,
                snapshot_sha256=digest,
                outcome=ALREADY,
                consolidation_id=UUID(known.consolidation["id"]),
                reasons=_stored_reasons(known.consolidation["reasons"]),
            )
        elif known.evaluation is not None:
            results[version.id] = Evaluated(
                **base,
                snapshot_sha256=digest,
                outcome=NOT_READY,
                consolidation_id=None,
                evaluation_id=UUID(known.evaluation["id"]),
                reasons=_stored_reasons(known.evaluation["reasons"]),
            )
        else:
            decision = evaluate(snapshots[version.id])
            if dry_run:
                outcome = WOULD_COMMIT if decision.positive else NOT_READY
                results[version.id] = Evaluated(
                    **base,
                    snapshot_sha256=digest,
                    outcome=outcome,
                    consolidation_id=None,
                    **_explained(decision),
                )
            else:
                (positive if decision.positive else negative).append((version, decision))
    # Rivals decided in one round from one view of the data would both see no live rival:
    # one positive per alternative set now, the others decided again in the next round.
    positive, later = one_per_set([(item, snapshots[item[0].id]) for item in positive])
    deferred = [version.id for version, _ in later]
    if negative:
        results.update(_record_not_ready(conn, negative, snapshots, hashed, actor))
    if positive:
        results.update(_commit(conn, positive, snapshots, digests, state.live, actor))
    return results, deferred


def _live(conn: Connection, versions: list[BatchVersion]) -> LiveAndLocked:
    """Each node's live consolidation (by logical node id) and the shared locks on the
    evidence the versions cite, taken now (under the node locks)."""
    with metrics.lock_wait("evidence"):
        [live] = fetch(
            conn,
            "commit_live",
            LiveAndLocked,
            logical_node_ids=[v.logical_node_id for v in versions],
            version_ids=[v.id for v in versions],
        )
        return live


class _Base(TypedDict):
    node_version_id: UUID
    logical_node_id: UUID
    thread_id: UUID
    dry_run: bool


class _Explained(TypedDict):
    decision: str
    reasons: list[RuleReason]
    groups: list[GroupShape]


def _base(version: BatchVersion, dry_run: bool) -> _Base:
    return {
        "node_version_id": version.id,
        "logical_node_id": version.logical_node_id,
        "thread_id": version.thread_id,
        "dry_run": dry_run,
    }


def _record_not_ready(
    conn: Connection,
    decided: list[tuple[BatchVersion, Decision]],
    snapshots: dict[UUID, Snapshot],
    hashed: dict[UUID, tuple[str, dict[str, str]]],
    actor: str,
) -> dict[UUID, Evaluated]:
    tails = evaluation_chains.tails(conn, [version.id for version, _ in decided])
    items = []
    reasons: list[list[ReasonDict]] = []
    links: dict[UUID, evaluation_chains.Link] = {}
    for version, decision in decided:
        manifest = manifest_of(snapshots[version.id])
        claim_runs = {c["id"]: c["run_id"] for c in snapshots[version.id]["claims"]}
        if not chain_codec.runs_are_derived(manifest, claim_runs):  # a chain stores no runs
            raise CouncilError(f"the manifest of version {version.id} names runs without claims")
        link = evaluation_chains.next_link(tails.get(version.id), manifest, hashed[version.id][1])
        links[version.id] = link
        reasons.append([r.as_dict() for r in decision.reasons])
        items.append(
            {
                "thread_id": str(version.thread_id),
                "logical_node_id": str(version.logical_node_id),
                "version_id": str(version.id),
                "rule_set_id": snapshots[version.id]["rule_set"]["id"],
                "grouping_algorithm_id": snapshots[version.id]["grouping"]["id"],
                "digest": hashed[version.id][0],
                "reasons": reasons[-1],
                "claims_seen": len(manifest["claims"]),
                **link,
                "failed": [r.rule for r in decision.failed()],
            }
        )
    # Every reason is stored once by content; a row lists its reasons' ids (revision 0014).
    evaluation_chains.store_reasons(conn, reasons)
    written = {
        row.version_id: row.evaluation_id
        for row in fetch(
            conn, "commit_not_ready", NotReady, items=json.dumps(items), actor=actor, screen=False
        )
    }
    for (
        version,
        _,
    ) in decided:  # the next evaluation of each starts from here, unless another process adds one
        position = tails.get(version.id)
        evaluation_chains.written(
            position.tail if position else None, links[version.id], written[version.id], hashed[version.id][0]
        )
    return {
        version.id: Evaluated(
            **_base(version, False),
            snapshot_sha256=hashed[version.id][0],
            outcome=NOT_READY,
            consolidation_id=None,
            evaluation_id=written[version.id],
            **_explained(decision),
        )
        for version, decision in decided
    }


def _commit(
    conn: Connection,
    decided: list[tuple[BatchVersion, Decision]],
    snapshots: dict[UUID, Snapshot],
    digests: dict[UUID, str],
    live: dict[str, LiveConsolidation],
    actor: str,
) -> dict[UUID, Evaluated]:
    items = []
    superseded: dict[UUID, tuple[UUID | None, list[str]]] = {}
    for version, decision in decided:
        snapshot = snapshots[version.id]
        older = live.get(str(version.logical_node_id))
        superseding = UUID(older["id"]) if older is not None else None
        if superseding is not None:
            _supersede(conn, superseding, version.id, version.thread_id, actor)
        evidence_ids = support_evidence(snapshot)
        superseded[version.id] = (superseding, evidence_ids)
        items.append(
            {
                "thread_id": str(version.thread_id),
                "logical_node_id": str(version.logical_node_id),
                "version_id": str(version.id),
                "rule_set_id": snapshot["rule_set"]["id"],
                "grouping_algorithm_id": snapshot["grouping"]["id"],
                "snapshot": snapshot,
                "digest": digests[version.id],
                "decision": decision.as_dict(),
                "evidence_ids": evidence_ids,
                "content": version.content,
                "from_status": snapshot["node"]["status"],
                "reason": "consolidated under " + snapshot["rule_set"]["id"],
                "payload": {
                    "node_version_id": str(version.id),
                    "snapshot_sha256": digests[version.id],
                    "support_groups": [g.id for g in decision.groups if g.kind == "support"],
                    "superseded": str(superseding) if superseding else None,
                },
            }
        )
    written = {
        row.version_id: row
        for row in fetch(conn, "commit_write", Written, items=json.dumps(items), actor=actor, screen=False)
    }
    return {
        version.id: Evaluated(
            **_base(version, False),
            snapshot_sha256=digests[version.id],
            outcome=COMMITTED,
            consolidation_id=written[version.id].consolidation_id,
            memory_item_id=written[version.id].memory_item_id,
            superseded_consolidation_id=superseded[version.id][0],
            evidence_ids=superseded[version.id][1],
            **_explained(decision),
        )
        for version, decision in decided
    }


def _supersede(conn: Connection, old_id: UUID, new_version_id: UUID, thread_id: UUID, actor: str) -> None:
    """A newer version consolidates: the old consolidation and its memory item
    become superseded (historically valid, replaced) in the same transaction."""
    reason = f"superseded by a consolidation of version {new_version_id}"
    execute(conn, "supersede_consolidation", consolidation_id=old_id, reason=reason, actor=actor)
    [memory] = fetch(conn, "superseded_memory", MemoryState, consolidation_id=old_id)
    if memory.status not in ("retracted", "superseded"):
        execute(
            conn,
            "supersede_memory",
            memory_item_id=memory.id,
            from_status=memory.status,
            reason=reason,
            actor=actor,
        )
    events.append(
        conn,
        "consolidation.superseded",
        actor=actor,
        thread_id=thread_id,
        subject_id=old_id,
        payload={"by_version_id": str(new_version_id), "memory_item_id": str(memory.id)},
    )


def _explained(decision: Decision) -> _Explained:
    """A decision's outcome, reasons and groups, as the result reports them."""
    return {
        "decision": decision.outcome,
        "reasons": [RuleReason(rule=r.rule, ok=r.ok, detail=r.detail) for r in decision.reasons],
        "groups": [GroupShape.model_validate(group_dict(g)) for g in decision.groups],
    }


def _stored_reasons(stored: list[JsonObject]) -> list[RuleReason]:
    """The reasons stored with a consolidation or evaluation (JSON)."""
    return [RuleReason.model_validate(r) for r in stored]
