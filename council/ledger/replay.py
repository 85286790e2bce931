"""Replay (invariant 9): recompute a stored decision from the ledger's records.

The stored snapshot names every row it used; replay re-reads exactly those
rows, rebuilds the canonical snapshot, compares hashes, and recomputes the
decision with the pinned rule set and grouping version. Timestamps play no
part (commit order is not timestamp order). A not-ready evaluation stores its
manifest and the hash of each snapshot section instead of the snapshot (since
revision 0005), which is all replay needs; ``differences`` names the sections
whose hashes differ either way.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Engine, select

from council.domain.rules import evaluate
from council.domain.snapshot import manifest_of, snapshot_digests
from council.errors import NotFound
from council.ledger import tables as t
from council.ledger.db import unit_of_work
from council.ledger.snapshots import snapshot_from_manifest


def replay(engine: Engine, record_id: UUID) -> dict[str, Any]:
    """Replay a consolidation (or a stored not-ready evaluation) by id."""
    with unit_of_work(engine) as conn:
        row = (
            conn.execute(select(t.consolidations).where(t.consolidations.c.id == record_id))
            .mappings()
            .first()
        )
        kind = "consolidation"
        if row is None:
            row = (
                conn.execute(
                    select(t.consolidation_evaluations).where(t.consolidation_evaluations.c.id == record_id)
                )
                .mappings()
                .first()
            )
            kind = "evaluation"
        if row is None:
            raise NotFound(f"no consolidation or evaluation with id {record_id}")
        stored = row["snapshot"]
        if stored is not None:
            stored_hash, stored_sections = snapshot_digests(stored)
            named = manifest_of(stored)
        else:
            stored_hash, stored_sections = row["snapshot_sha256"], row["section_sha256"]
            named = row["manifest"]
        rebuilt = snapshot_from_manifest(conn, named)
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
    return {
        "id": record_id,
        "kind": kind,
        "match": hash_match and decision_match and pinned_match,
        "snapshot_sha256": row["snapshot_sha256"],
        "replayed_sha256": rebuilt_hash,
        "hash_match": hash_match,
        "decision_match": decision_match,
        "stored_outcome": stored_outcome,
        "replayed_outcome": decision["outcome"],
        "rule_set_id": row["rule_set_id"],
        "grouping_algorithm_id": row["grouping_algorithm_id"],
        "differences": sorted(
            k
            for k in stored_sections.keys() | rebuilt_sections.keys()
            if stored_sections.get(k) != rebuilt_sections.get(k)
        ),
    }
