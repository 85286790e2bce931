"""Claims: agreement and disagreement are appended, never applied (invariant 4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Engine, insert, select

from council.domain import validate as v
from council.domain.vocabulary import CLAIM_TYPES
from council.errors import BadInput
from council.ledger import events
from council.ledger import tables as t
from council.ledger.citations import check_cited, insert_citations
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
    v.choice(claim_type, "claim type", CLAIM_TYPES)
    level = v.confidence(confidence)
    rationale = v.text(rationale, "rationale", v.MAX_RATIONALE, allow_empty=True)
    interpretation = v.text(interpretation, "interpretation", v.MAX_RATIONALE, allow_empty=True)
    role = citation_role or DEFAULT_ROLE[claim_type]
    with unit_of_work(engine) as conn:
        run = require(conn, t.agent_runs, run_id, "run")
        version = require(conn, t.node_versions, version_id, "node version")
        if run["thread_id"] != version["thread_id"]:
            raise BadInput(f"run {run_id} and node version {version_id} belong to different threads")
        existing = conn.execute(
            select(t.claims.c.id, t.claims.c.claim_type).where(
                t.claims.c.run_id == run_id, t.claims.c.node_version_id == version_id
            )
        ).first()
        if existing is not None:
            raise BadInput(
                f"run {run_id} already made a claim ({existing[1]}) on node version {version_id}: "
                "a run claims once per version"
            )
        check_cited(conn, version["thread_id"], cites)
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
        citation_ids = insert_citations(
            conn,
            version=version,
            evidence_ids=cites,
            role=role,
            interpretation=interpretation,
            run_id=run_id,
            claim_id=claim["id"],
        )
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
