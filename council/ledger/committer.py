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
planned by weight by ``council.services.consolidation.plan_batches``). A round of it costs
two calls (revision 0044): ``council_evaluate_read_v1`` takes every lock, in key order, and
returns everything the decision reads as one document (the versions, each node's live
consolidation, the rows of each snapshot, what is already recorded for each version and its
evaluation chain's tail); the decision is made here, in Python (``council.domain.rules``);
``council_evaluate_write_v1`` writes every record of the round. Each version is decided
exactly as it would be alone. A batch closes once its versions carry about
``CLAIMS_PER_TRANSACTION`` claims (the service plans it), so locks on heavily claimed
nodes are held as briefly as before batching.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal, TypedDict, cast
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
from council.ledger import evaluation_chains
from council.ledger.committer_rows import (
    BatchVersion,
    DecidedRead,
    EvaluationRead,
    EvaluationWritten,
    LiveConsolidation,
    Recorded,
    Weight,
)
from council.ledger.pg import Connection, column, fetch
from council.ledger.snapshots import read_snapshots

LOCK_TIMEOUT = "10s"
STATEMENT_TIMEOUT = "60s"

COMMITTED, ALREADY, NOT_READY, WOULD_COMMIT = CONSOLIDATION_OUTCOMES


# How the read call takes a batch's node locks (council_evaluate_read_v1, revision 0044).
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


def _read(conn: Connection, version_ids: list[UUID], wait: NodeLockWait) -> EvaluationRead:
    """One call: the round's locks and everything its decision reads (council_evaluate_read_v1)."""
    with metrics.lock_wait("node") as locks:
        [read] = column(
            conn,
            "evaluate_read",
            dict,
            version_ids=version_ids,
            wait=wait,
            lock_timeout=LOCK_TIMEOUT,
            statement_timeout=STATEMENT_TIMEOUT,
        )
        if read["decided"]:  # the call took shared locks on the evidence they cite
            locks.append("evidence")
    return cast("EvaluationRead", read)


def _consolidate_batch(
    conn: Connection, version_ids: list[UUID], *, actor: str, dry_run: bool, wait: NodeLockWait = EXCLUSIVE
) -> dict[UUID, Evaluated]:
    read = _read(conn, version_ids, wait)
    if read["isolation"] != "read committed":
        # At a higher level the snapshot would predate the lock wait: stale.
        raise CouncilError(f"the committer needs READ COMMITTED, got {read['isolation']}")
    found = {version.id: version for version in map(BatchVersion.of, read["versions"])}
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
    # Now under the node locks. Versions of one logical node are decided in turn (one per
    # node per round), so a round writes at most one live consolidation per node and sees
    # the round before; so are rival alternatives a round would both consolidate
    # (``one_per_set``). The read function picks each round's versions by the same rule
    # (the first of each node, in the order given); a later round reads again, after the
    # round before it wrote (its locks are held already).
    pending = [v for v in version_ids if found[v].locked]
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
        decided, deferred = _decide(conn, this_round, read, actor=actor, dry_run=dry_run)
        results.update(decided)
        pending = later + deferred
        if pending:
            read = _read(conn, pending, EXCLUSIVE)
            live = {UUID(row["id"]): row["live"] for row in read["versions"]}
            found.update((v, replace(found[v], live=live[v])) for v in pending)
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
    conn: Connection, versions: list[BatchVersion], read: EvaluationRead, *, actor: str, dry_run: bool
) -> tuple[dict[UUID, Evaluated], list[UUID]]:
    """One round: versions of distinct logical nodes, their node locks held, ``read`` after
    the locks and after any round before. Returns the results and the versions left for the
    next round (a rival of one this round consolidates: decided again once it is written,
    it sees it live)."""
    results: dict[UUID, Evaluated] = {}
    todo = []
    for version in versions:
        repeat = _repeat(version, version.live, dry_run)
        if repeat is not None:
            results[version.id] = repeat
        else:
            todo.append(version)
    loaded = {UUID(d["version_id"]): d for d in read["decided"] or []}
    if set(loaded) != {v.id for v in todo}:
        raise CouncilError("the evaluation read chose other versions than the round decides")
    if not todo:
        return results, []
    snapshots = read_snapshots(list(loaded.values()), read["error_sums"], read["own_errors"])
    hashed = {v.id: snapshot_digests(snapshots[v.id]) for v in todo}
    positive: list[tuple[BatchVersion, Decision]] = []
    negative: list[tuple[BatchVersion, Decision]] = []
    for version in todo:
        base, digest = _base(version, dry_run), hashed[version.id][0]
        consolidation, evaluation = _recorded(loaded[version.id], digest)
        if consolidation is not None:
            results[version.id] = Evaluated(
                **base,
                snapshot_sha256=digest,
                outcome=ALREADY,
                consolidation_id=UUID(consolidation["id"]),
                reasons=_stored_reasons(consolidation["reasons"] or []),
            )
        elif evaluation is not None:
            results[version.id] = Evaluated(
                **base,
                snapshot_sha256=digest,
                outcome=NOT_READY,
                consolidation_id=None,
                evaluation_id=UUID(evaluation["id"]),
                reasons=_stored_reasons(evaluation["reasons"] or []),
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
    if negative or positive:
        results.update(_write(conn, negative, positive, snapshots, hashed, loaded, actor))
    return results, [version.id for version, _ in later]


def _recorded(loaded: DecidedRead, digest: str) -> tuple[Recorded | None, Recorded | None]:
    """The consolidation, else the evaluation, already recorded for this snapshot hash. A
    chained evaluation can only be the chain's tail (an older snapshot of a version never
    recurs: its manifest only gains rows; revision 0013); one written before chains is
    found by its hash."""
    consolidation = next((c for c in loaded["consolidations"] if c["snapshot_sha256"] == digest), None)
    tail = loaded["tail"]
    if tail is not None and tail["snapshot_sha256"] == digest:
        evaluation: Recorded | None = {
            "id": tail["id"],
            "snapshot_sha256": digest,
            "reasons": tail["reasons"],
        }
    else:
        evaluation = next((e for e in loaded["unchained"] if e["snapshot_sha256"] == digest), None)
    return consolidation, evaluation


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


def _write(
    conn: Connection,
    negative: list[tuple[BatchVersion, Decision]],
    positive: list[tuple[BatchVersion, Decision]],
    snapshots: dict[UUID, Snapshot],
    hashed: dict[UUID, tuple[str, dict[str, str]]],
    loaded: dict[UUID, DecidedRead],
    actor: str,
) -> dict[UUID, Evaluated]:
    """Every record of the round in one call (council_evaluate_write_v1): the not-ready
    evaluations, then the supersessions and consolidations of the positive ones."""
    ends = [end for v, _ in negative if (end := _tail_end(v.id, loaded[v.id])) is not None]
    tails = evaluation_chains.positions(conn, ends)
    not_ready, reasons, links = _not_ready_items(negative, snapshots, hashed, tails)
    committed, supersede = _committed_items(positive, snapshots, hashed)
    [written] = column(
        conn,
        "evaluate_write",
        dict,
        actor=actor,
        reasons=json.dumps(evaluation_chains.reasons_once(reasons)),
        not_ready=json.dumps(not_ready),
        supersede=json.dumps(supersede),
        positive=json.dumps(committed),
    )
    document = cast("EvaluationWritten", written)
    evaluations = {UUID(r["version_id"]): UUID(r["evaluation_id"]) for r in document["not_ready"] or []}
    consolidations = {UUID(r["version_id"]): r for r in document["committed"] or []}
    for (
        version,
        _,
    ) in negative:  # the next evaluation of each starts from here, unless another process adds one
        position = tails.get(version.id)
        evaluation_chains.written(
            position.tail if position else None,
            links[version.id],
            evaluations[version.id],
            hashed[version.id][0],
        )
    results = {
        version.id: Evaluated(
            **_base(version, False),
            snapshot_sha256=hashed[version.id][0],
            outcome=NOT_READY,
            consolidation_id=None,
            evaluation_id=evaluations[version.id],
            **_explained(decision),
        )
        for version, decision in negative
    }
    for version, decision in positive:
        older = version.live
        results[version.id] = Evaluated(
            **_base(version, False),
            snapshot_sha256=hashed[version.id][0],
            outcome=COMMITTED,
            consolidation_id=UUID(consolidations[version.id]["consolidation_id"]),
            memory_item_id=UUID(consolidations[version.id]["memory_item_id"]),
            superseded_consolidation_id=UUID(older["id"]) if older is not None else None,
            evidence_ids=support_evidence(snapshots[version.id]),
            **_explained(decision),
        )
    return results


def _tail_end(version_id: UUID, loaded: DecidedRead) -> evaluation_chains.TailEnd | None:
    tail = loaded["tail"]
    if tail is None:
        return None
    # Only a compact tail is kept by its digest, and a compact row always has one.
    return evaluation_chains.TailEnd(
        version_id, UUID(tail["id"]), tail["seq"], tail["digest"] or "", tail["compact"]
    )


def _not_ready_items(
    decided: list[tuple[BatchVersion, Decision]],
    snapshots: dict[UUID, Snapshot],
    hashed: dict[UUID, tuple[str, dict[str, str]]],
    tails: dict[UUID, evaluation_chains.Position],
) -> tuple[list[dict[str, object]], list[list[ReasonDict]], dict[UUID, evaluation_chains.Link]]:
    """Each not-ready decision as the next row of its version's evaluation chain, its
    reasons (stored once by content; a row lists their ids, revision 0014) and its link."""
    items: list[dict[str, object]] = []
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
    return items, reasons, links


def _committed_items(
    decided: list[tuple[BatchVersion, Decision]],
    snapshots: dict[UUID, Snapshot],
    hashed: dict[UUID, tuple[str, dict[str, str]]],
) -> tuple[list[dict[str, object]], list[dict[str, str]]]:
    """Each positive decision as the records it writes, and the older live consolidation of
    its node that a newer version consolidating supersedes (historically valid, replaced)."""
    items: list[dict[str, object]] = []
    supersede: list[dict[str, str]] = []
    for version, decision in decided:
        snapshot = snapshots[version.id]
        superseding = version.live["id"] if version.live is not None else None
        if superseding is not None:
            supersede.append(
                {
                    "consolidation_id": superseding,
                    "version_id": str(version.id),
                    "thread_id": str(version.thread_id),
                }
            )
        items.append(
            {
                "thread_id": str(version.thread_id),
                "logical_node_id": str(version.logical_node_id),
                "version_id": str(version.id),
                "rule_set_id": snapshot["rule_set"]["id"],
                "grouping_algorithm_id": snapshot["grouping"]["id"],
                "snapshot": snapshot,
                "digest": hashed[version.id][0],
                "decision": decision.as_dict(),
                "evidence_ids": list(support_evidence(snapshot)),
                "content": version.content,
                "from_status": snapshot["node"]["status"],
                "reason": "consolidated under " + snapshot["rule_set"]["id"],
                "payload": {
                    "node_version_id": str(version.id),
                    "snapshot_sha256": hashed[version.id][0],
                    "support_groups": [g.id for g in decision.groups if g.kind == "support"],
                    "superseded": superseding,
                },
            }
        )
    return items, supersede


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
