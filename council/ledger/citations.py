"""Citations: branch-local role and interpretation of shared evidence (invariant 2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, insert, select

from council.domain import validate as v
from council.domain.vocabulary import CITATION_ROLES
from council.errors import NotFound
from council.ledger import tables as t


@dataclass(frozen=True)
class Cite:
    """One citation to write: which evidence, and this branch's reading of it.
    ``role=None`` takes the default of where it is attached (e.g. the claim type)."""

    evidence_id: UUID
    role: str | None = None
    interpretation: str = ""


def same_reading(evidence_ids: Sequence[UUID], role: str | None, interpretation: str) -> list[Cite]:
    """Several evidence items cited with one role and one reading."""
    return [Cite(evidence_id, role, interpretation) for evidence_id in evidence_ids]


def checked(cites: Sequence[Cite], default_role: str) -> list[Cite]:
    """Validated citations with their roles resolved (before any write)."""
    v.count(cites, "citations")
    return [
        Cite(
            cite.evidence_id,
            v.choice(cite.role or default_role, "citation role", CITATION_ROLES),
            v.text(cite.interpretation, "interpretation", v.MAX_RATIONALE, allow_empty=True),
        )
        for cite in cites
    ]


def check_cited(conn: Connection, thread_id: UUID, evidence_ids: Sequence[UUID]) -> None:
    """Every cited evidence item must exist and be attached to the thread."""
    if not evidence_ids:
        return
    v.count(evidence_ids, "citations")
    found = {
        row[0]
        for row in conn.execute(
            select(t.thread_evidence.c.evidence_id).where(
                t.thread_evidence.c.thread_id == thread_id,
                t.thread_evidence.c.evidence_id.in_(list(evidence_ids)),
            )
        )
    }
    missing = [str(e) for e in evidence_ids if e not in found]
    if missing:
        raise NotFound(f"no evidence {missing[0]} in this thread (add it with `council evidence add`)")


def insert_citations(
    conn: Connection,
    *,
    version: Any,
    cites: Sequence[Cite],
    run_id: UUID | None = None,
    claim_id: UUID | None = None,
) -> list[UUID]:
    """Insert citations already passed through :func:`checked`."""
    if not cites:
        return []
    rows = [
        {
            "node_version_id": version["id"],
            "evidence_id": cite.evidence_id,
            "branch_id": version["branch_id"],
            "claim_id": claim_id,
            "run_id": run_id,
            "role": cite.role,
            "interpretation": cite.interpretation,
        }
        for cite in cites
    ]
    return [r[0] for r in conn.execute(insert(t.citations).returning(t.citations.c.id), rows)]
