"""The consolidation committer: exactly one live consolidation per logical node
(invariant 8), under any concurrency, retry, redelivery or crash (DESIGN §4).

One transaction at READ COMMITTED; the logical node's transaction-scoped
advisory lock; then idempotency (same version + same snapshot hash → the
existing result), then "already live?", then evaluate and write. The partial
unique index ``consolidations_one_live_per_node`` backs the lock.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Engine, insert, select

from council import metrics
from council.domain.rules import Decision, evaluate
from council.domain.snapshot import snapshot_hash, support_evidence
from council.errors import CouncilError, Duplicate, NotFound, TransientDatabaseError
from council.ledger import events
from council.ledger import tables as t
from council.ledger.db import unit_of_work
from council.ledger.lookup import require
from council.ledger.snapshots import locked_snapshot
from council.sql import query

LOCK_TIMEOUT = "10s"
STATEMENT_TIMEOUT = "60s"
MAX_ATTEMPTS = 6

COMMITTED = "committed"
ALREADY = "already_consolidated"
NOT_READY = "not_ready"
WOULD_COMMIT = "would_commit"


class _DryRun(Exception):
    """Raised inside the transaction to roll a dry run back."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result


def consolidate(engine: Engine, version_id: UUID, *, actor: str, dry_run: bool = False) -> dict[str, Any]:
    """Evaluate a node version and commit its consolidation if the rules allow.

    Retries the whole transaction on serialization failure, deadlock or lock
    timeout (bounded, jittered); a unique violation means another committer
    won, so the existing row is read back and returned.
    """
    started = time.monotonic()
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            with unit_of_work(engine) as conn:
                result = _consolidate_once(conn, version_id, actor=actor, dry_run=dry_run)
            return _observed(result, started)
        except _DryRun as done:
            return done.result
        except TransientDatabaseError:
            if attempt == MAX_ATTEMPTS:
                raise
            metrics.count_retry("commit_transaction")
            time.sleep(random.uniform(0, 0.05 * 2**attempt))  # noqa: S311 - jitter, not security
        except Duplicate:
            existing = _read_back(engine, version_id)
            if existing is not None:
                return _observed(existing, started)
            if attempt == MAX_ATTEMPTS:
                raise
            metrics.count_retry("commit_transaction")
    raise AssertionError("unreachable")


def _observed(result: dict[str, Any], started: float) -> dict[str, Any]:
    """Commit latency by outcome, after the transaction ended (a dry run is not a commit)."""
    if not result["dry_run"]:
        metrics.observe_commit(result["outcome"], time.monotonic() - started)
    return result


def _consolidate_once(conn: Connection, version_id: UUID, *, actor: str, dry_run: bool) -> dict[str, Any]:
    with metrics.lock_wait("node"):
        begun = conn.execute(
            query("commit_begin"),
            {"version_id": version_id, "lock_timeout": LOCK_TIMEOUT, "statement_timeout": STATEMENT_TIMEOUT},
        ).first()
    if begun is None:
        raise NotFound(f"no node version with id {version_id}")
    if begun.isolation != "read committed":
        # At a higher level the snapshot would predate the lock wait: stale.
        raise CouncilError(f"the committer needs READ COMMITTED, got {begun.isolation}")
    logical_node_id = begun.logical_node_id
    base: dict[str, Any] = {
        "node_version_id": version_id,
        "logical_node_id": logical_node_id,
        "thread_id": begun.thread_id,
        "dry_run": dry_run,
    }
    # Now under the node lock: every statement from here sees what committed before it.
    with metrics.lock_wait("evidence"):
        state = conn.execute(
            query("commit_live"), {"logical_node_id": logical_node_id, "version_id": version_id}
        ).one()
    live = state.live
    if live is not None and live["node_version_id"] == str(version_id):
        # Idempotent at the version level: committing changes the version's
        # status, so a repeat sees a new snapshot hash but must get the same row.
        return {
            **base,
            "snapshot_sha256": live["snapshot_sha256"],
            "outcome": ALREADY,
            "consolidation_id": UUID(live["id"]),
            "reasons": live["reasons"],
        }

    snapshot = locked_snapshot(conn, version_id, locked={str(e) for e in state.locked})
    digest = snapshot_hash(snapshot)
    base["snapshot_sha256"] = digest
    decided = conn.execute(query("commit_decided"), {"version_id": version_id, "digest": digest}).one()
    if decided.consolidation is not None:
        return {
            **base,
            "outcome": ALREADY,
            "consolidation_id": UUID(decided.consolidation["id"]),
            "reasons": decided.consolidation["reasons"],
        }
    if decided.evaluation is not None:
        return {
            **base,
            "outcome": NOT_READY,
            "consolidation_id": None,
            "evaluation_id": UUID(decided.evaluation["id"]),
            "reasons": decided.evaluation["reasons"],
        }

    decision = evaluate(snapshot)
    if dry_run:
        raise _DryRun(
            {
                **base,
                "outcome": WOULD_COMMIT if decision.positive else NOT_READY,
                "consolidation_id": None,
                **_details(decision),
            }
        )
    if not decision.positive:
        return _record_not_ready(conn, base, snapshot, decision, actor)
    superseding = UUID(live["id"]) if live is not None else None
    return _commit(conn, base, snapshot, decision, actor, begun.content, superseding)


def _record_not_ready(
    conn: Connection, base: dict[str, Any], snapshot: dict[str, Any], decision: Decision, actor: str
) -> dict[str, Any]:
    reasons = [r.as_dict() for r in decision.reasons]
    evaluation_id = conn.execute(
        insert(t.consolidation_evaluations)
        .values(
            thread_id=base["thread_id"],
            logical_node_id=base["logical_node_id"],
            node_version_id=base["node_version_id"],
            rule_set_id=snapshot["rule_set"]["id"],
            grouping_algorithm_id=snapshot["grouping"]["id"],
            snapshot_sha256=base["snapshot_sha256"],
            outcome=NOT_READY,
            reasons=reasons,
            snapshot=snapshot,
        )
        .returning(t.consolidation_evaluations.c.id)
    ).scalar_one()
    events.append(
        conn,
        "consolidation.not_ready",
        actor=actor,
        thread_id=base["thread_id"],
        subject_id=base["node_version_id"],
        payload={"evaluation_id": str(evaluation_id), "failed": [r.rule for r in decision.failed()]},
    )
    return {
        **base,
        "outcome": NOT_READY,
        "consolidation_id": None,
        "evaluation_id": evaluation_id,
        **_details(decision),
    }


def _commit(
    conn: Connection,
    base: dict[str, Any],
    snapshot: dict[str, Any],
    decision: Decision,
    actor: str,
    content: str,
    superseding: UUID | None,
) -> dict[str, Any]:
    thread_id = base["thread_id"]
    if superseding is not None:
        _supersede(conn, superseding, base["node_version_id"], thread_id, actor)
    evidence_ids = support_evidence(snapshot)
    details = _details(decision)
    written = conn.execute(
        query("commit_write"),
        {
            "thread_id": thread_id,
            "logical_node_id": base["logical_node_id"],
            "version_id": base["node_version_id"],
            "rule_set_id": snapshot["rule_set"]["id"],
            "grouping_algorithm_id": snapshot["grouping"]["id"],
            "snapshot": json.dumps(snapshot),
            "digest": base["snapshot_sha256"],
            "decision": json.dumps(decision.as_dict()),
            "evidence_ids": evidence_ids,
            "content": content,
            "from_status": snapshot["node"]["status"],
            "reason": "consolidated under " + snapshot["rule_set"]["id"],
            "actor": actor,
            "payload": json.dumps(
                {
                    "node_version_id": str(base["node_version_id"]),
                    "snapshot_sha256": base["snapshot_sha256"],
                    "support_groups": [g["id"] for g in details["groups"] if g["kind"] == "support"],
                    "superseded": str(superseding) if superseding else None,
                }
            ),
        },
    ).one()
    return {
        **base,
        "outcome": COMMITTED,
        "consolidation_id": written.consolidation_id,
        "memory_item_id": written.memory_item_id,
        "superseded_consolidation_id": superseding,
        "evidence_ids": evidence_ids,
        **details,
    }


def _supersede(conn: Connection, old_id: UUID, new_version_id: UUID, thread_id: UUID, actor: str) -> None:
    """A newer version consolidates: the old consolidation and its memory item
    become superseded (historically valid, replaced) in the same transaction."""
    reason = f"superseded by a consolidation of version {new_version_id}"
    conn.execute(
        insert(t.consolidation_transitions).values(
            consolidation_id=old_id, from_status="live", to_status="superseded", reason=reason, actor=actor
        )
    )
    memory = conn.execute(
        select(t.memory_items.c.id, t.memory_items.c.status).where(
            t.memory_items.c.consolidation_id == old_id
        )
    ).one()
    if memory.status not in ("retracted", "superseded"):
        conn.execute(
            insert(t.memory_transitions).values(
                memory_item_id=memory.id,
                from_status=memory.status,
                to_status="superseded",
                reason=reason,
                actor=actor,
            )
        )
    events.append(
        conn,
        "consolidation.superseded",
        actor=actor,
        thread_id=thread_id,
        subject_id=old_id,
        payload={"by_version_id": str(new_version_id), "memory_item_id": str(memory.id)},
    )


def _details(decision: Decision) -> dict[str, Any]:
    """Reasons and groups of a decision (its outcome is reported by the caller)."""
    details = decision.as_dict()
    details["decision"] = details.pop("outcome")
    return details


def _read_back(engine: Engine, version_id: UUID) -> dict[str, Any] | None:
    with unit_of_work(engine) as conn:
        version = require(conn, t.node_versions, version_id, "node version")
        live = (
            conn.execute(
                select(t.consolidations).where(
                    t.consolidations.c.logical_node_id == version["logical_node_id"],
                    t.consolidations.c.status == "live",
                )
            )
            .mappings()
            .first()
        )
    if live is None or live["node_version_id"] != version_id:
        return None
    return {
        "node_version_id": version_id,
        "logical_node_id": version["logical_node_id"],
        "thread_id": version["thread_id"],
        "snapshot_sha256": live["snapshot_sha256"],
        "dry_run": False,
        "outcome": ALREADY,
        "consolidation_id": live["id"],
        "reasons": live["decision"]["reasons"],
    }
