"""Claims: agreement and disagreement are appended, never applied (invariant 4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Engine, insert, select

from council.domain import validate as v
from council.domain.vocabulary import CLAIM_TYPES
from council.errors import BadInput
from council.ledger import events
from council.ledger import tables as t
from council.ledger.citations import Cite, check_cited, checked, insert_citations, same_reading
from council.ledger.db import unit_of_work
from council.ledger.lookup import require

# What a citation attached to a claim means, by claim type.
DEFAULT_ROLE = {
    "originate": "supports",
    "endorse": "supports",
    "dispute": "contradicts",
    "abstain": "context",
}


def add_claim(
    engine: Engine,
    *,
    run_id: UUID,
    version_id: UUID,
    claim_type: str,
    actor: str,
    confidence: float | str | None = None,
    rationale: str = "",
    cites: Sequence[UUID] = (),
    citation_role: str | None = None,
    interpretation: str = "",
) -> dict[str, Any]:
    with unit_of_work(engine) as conn:
        return add_claim_in(
            conn,
            run_id=run_id,
            version_id=version_id,
            claim_type=claim_type,
            actor=actor,
            confidence=confidence,
            rationale=rationale,
            cites=same_reading(cites, citation_role, interpretation),
        )


def add_claim_in(
    conn: Connection,
    *,
    run_id: UUID,
    version_id: UUID,
    claim_type: str,
    actor: str,
    confidence: float | str | None = None,
    rationale: str = "",
    cites: Sequence[Cite] = (),
) -> dict[str, Any]:
    """One claim of a run on a node version, with its citations (a citation
    without a role takes the claim type's default)."""
    v.choice(claim_type, "claim type", CLAIM_TYPES)
    level = v.confidence(confidence)
    rationale = v.text(rationale, "rationale", v.MAX_RATIONALE, allow_empty=True)
    cites = checked(cites, DEFAULT_ROLE[claim_type])
    run = require(conn, t.agent_runs, run_id, "run")
    version = require(conn, t.node_versions, version_id, "node version")
    if run["thread_id"] != version["thread_id"]:
        raise BadInput(f"run {run_id} and node version {version_id} belong to different threads")
    existing = claimed_by_run(conn, run_id, [version_id])
    if existing:
        raise BadInput(
            f"run {run_id} already made a claim ({existing[version_id]}) on node version {version_id}: "
            "a run claims once per version"
        )
    check_cited(conn, version["thread_id"], [c.evidence_id for c in cites])
    claim = (
        conn.execute(
            insert(t.claims)
            .values(
                run_id=run_id,
                node_version_id=version_id,
                claim_type=claim_type,
                confidence=level,
                rationale=rationale,
            )
            .returning(t.claims)
        )
        .mappings()
        .one()
    )
    citation_ids = insert_citations(conn, version=version, cites=cites, run_id=run_id, claim_id=claim["id"])
    events.append(
        conn,
        "claim.added",
        actor=actor,
        thread_id=version["thread_id"],
        subject_id=claim["id"],
        payload={
            "run_id": str(run_id),
            "node_version_id": str(version_id),
            "claim_type": claim_type,
            "confidence": float(level),
            "citations": len(citation_ids),
        },
    )
    return {**dict(claim), "citation_ids": citation_ids}


def claimed_by_run(conn: Connection, run_id: UUID, version_ids: Sequence[UUID]) -> dict[UUID, str]:
    """The claim type ``run_id`` already has on each of ``version_ids`` that it claimed."""
    if not version_ids:
        return {}
    rows = conn.execute(
        select(t.claims.c.node_version_id, t.claims.c.claim_type).where(
            t.claims.c.run_id == run_id, t.claims.c.node_version_id.in_(list(version_ids))
        )
    )
    return {row[0]: str(row[1]) for row in rows}
