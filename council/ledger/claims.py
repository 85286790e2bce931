"""Claims: agreement and disagreement are appended, never applied (invariant 4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

from sqlalchemy import Connection, Engine, insert, select

from council.domain import validate as v
from council.domain.vocabulary import CLAIM_TYPES
from council.errors import BadInput, NotFound
from council.ledger import events
from council.ledger import tables as t
from council.ledger.citations import Cite, check_cited, checked, insert_citations_many, same_reading
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


@dataclass(frozen=True)
class NewClaim:
    """One claim to write: a run's stance on a node version, with its citations."""

    version_id: UUID
    claim_type: str
    confidence: float | str | None = None
    rationale: str = ""
    cites: Sequence[Cite] = ()


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
    new = NewClaim(version_id, claim_type, confidence, rationale, cites)
    return add_claims_in(conn, run_id=run_id, claims=[new], actor=actor)[0]


def add_claims_in(
    conn: Connection, *, run_id: UUID, claims: Sequence[NewClaim], actor: str
) -> list[dict[str, Any]]:
    """Several claims of one run, checked first, then written set-based: one
    statement each for the claims, their citations and their events, whatever
    their number (an agent's output claims on dozens of versions at once)."""
    checked_claims = _checked(claims)
    if not checked_claims:
        return []
    run = require(conn, t.agent_runs, run_id, "run")
    version_ids = [claim.version_id for claim in claims]
    versions = _versions_of_thread(conn, version_ids, run_id, run["thread_id"])
    repeated = next((vid for i, vid in enumerate(version_ids) if vid in version_ids[:i]), None)
    existing = claimed_by_run(conn, run_id, version_ids)
    if repeated is not None or existing:
        version_id = repeated if repeated is not None else next(iter(existing))
        made = existing.get(version_id, "in this batch")
        raise BadInput(
            f"run {run_id} already made a claim ({made}) on node version {version_id}: "
            "a run claims once per version"
        )
    check_cited(conn, run["thread_id"], [c.evidence_id for *_, cites in checked_claims for c in cites])
    return _write(conn, run, checked_claims, versions, actor)


def write_checked_claims(
    conn: Connection,
    *,
    run: Mapping[str, Any],
    claims: Sequence[NewClaim],
    versions: Mapping[UUID, Any],
    actor: str,
) -> list[dict[str, Any]]:
    """Claims whose references the caller has checked in this same transaction
    (``apply_output.check_output``: versions in the run's thread and not claimed
    by it yet, evidence attached): ``versions`` are the rows it found. Values
    are still validated here; the lookups are not repeated."""
    checked_claims = _checked(claims)
    return _write(conn, run, checked_claims, versions, actor) if checked_claims else []


_Checked = tuple[NewClaim, str, Any, str, list[Cite]]


def _checked(claims: Sequence[NewClaim]) -> list[_Checked]:
    return [
        (
            claim,
            v.choice(claim.claim_type, "claim type", CLAIM_TYPES),
            v.confidence(claim.confidence),
            v.text(claim.rationale, "rationale", v.MAX_RATIONALE, allow_empty=True),
            checked(claim.cites, DEFAULT_ROLE[claim.claim_type]),
        )
        for claim in claims
    ]


def _write(
    conn: Connection,
    run: Mapping[str, Any],
    checked_claims: list[_Checked],
    versions: Mapping[UUID, Any],
    actor: str,
) -> list[dict[str, Any]]:
    run_id = run["id"]
    values = [
        {
            "id": uuid4(),  # client-side keys put the batch's returned rows back in order
            "run_id": run_id,
            "node_version_id": claim.version_id,
            "claim_type": claim_type,
            "confidence": level,
            "rationale": rationale,
        }
        for claim, claim_type, level, rationale, _ in checked_claims
    ]
    returned = {
        row["id"]: dict(row) for row in conn.execute(insert(t.claims).returning(t.claims), values).mappings()
    }
    rows = [returned[value["id"]] for value in values]
    citation_ids = insert_citations_many(
        conn,
        [
            (versions[row["node_version_id"]], cites, row["id"])
            for row, (*_, cites) in zip(rows, checked_claims, strict=True)
        ],
        run_id=run_id,
    )
    events.append_many(
        conn,
        "claim.added",
        actor=actor,
        thread_id=run["thread_id"],
        items=[
            (
                row["id"],
                {
                    "run_id": str(run_id),
                    "node_version_id": str(row["node_version_id"]),
                    "claim_type": row["claim_type"],
                    "confidence": float(row["confidence"]),
                    "citations": len(ids),
                },
            )
            for row, ids in zip(rows, citation_ids, strict=True)
        ],
    )
    return [{**row, "citation_ids": ids} for row, ids in zip(rows, citation_ids, strict=True)]


def _versions_of_thread(
    conn: Connection, version_ids: Sequence[UUID], run_id: UUID, thread_id: UUID
) -> dict[UUID, Any]:
    found = {
        row["id"]: row
        for row in conn.execute(
            select(t.node_versions).where(t.node_versions.c.id.in_(list(set(version_ids))))
        ).mappings()
    }
    for version_id in version_ids:
        if version_id not in found:
            raise NotFound(f"no node version with id {version_id}")
        if found[version_id]["thread_id"] != thread_id:
            raise BadInput(f"run {run_id} and node version {version_id} belong to different threads")
    return found


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
