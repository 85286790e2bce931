"""Citations: branch-local role and interpretation of shared evidence (invariant 2).

Module functions over the caller's connection: the node, claim and output
writers attach citations inside their own statements' transaction.
Named SQL: council/sql/claim_store.sql and council/sql/outputs.sql.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TypedDict
from uuid import UUID, uuid4

from council.domain.commands import Cite
from council.errors import NotFound
from council.ledger.lookup import resolve
from council.ledger.pg import Connection, column, execute


class CitingVersion(TypedDict):
    """What a citation takes from the version that cites (a ``node_versions`` row has it)."""

    id: UUID
    branch_id: UUID


def resolved(conn: Connection, cites: Sequence[Cite]) -> list[Cite]:
    """The citations with their evidence named by whole id (prefixes resolved)."""
    return [
        cite
        if isinstance(cite.evidence, UUID)
        else Cite(resolve(conn, "evidence", cite.evidence, "evidence"), cite.role, cite.interpretation)
        for cite in cites
    ]


def check_cited(conn: Connection, thread_id: UUID, evidence_ids: Sequence[UUID]) -> None:
    """Every cited evidence item must exist and be attached to the thread."""
    require_attached(attached_evidence(conn, thread_id, evidence_ids), evidence_ids)


def attached_evidence(conn: Connection, thread_id: UUID, evidence_ids: Sequence[UUID]) -> set[UUID]:
    """Which of ``evidence_ids`` are attached to the thread (one query for any number)."""
    if not evidence_ids:
        return set()
    return set(column(conn, "attached_evidence", UUID, thread_id=thread_id, ids=list(set(evidence_ids))))


def require_attached(attached: set[UUID], evidence_ids: Sequence[UUID]) -> None:
    missing = [str(e) for e in evidence_ids if e not in attached]
    if missing:
        raise NotFound(f"no evidence {missing[0]} in this thread")


def insert_citations(
    conn: Connection,
    *,
    version: CitingVersion,
    cites: Sequence[Cite],
    run_id: UUID | None = None,
    claim_id: UUID | None = None,
) -> list[UUID]:
    """Insert citations whose roles are resolved and evidence ids whole."""
    return insert_citations_many(conn, [(version, cites, claim_id)], run_id=run_id)[0]


def insert_citations_many(
    conn: Connection,
    groups: Sequence[tuple[CitingVersion, Sequence[Cite], UUID | None]],
    *,
    run_id: UUID | None = None,
) -> list[list[UUID]]:
    """Citations of several (version, cites, claim id) groups in one statement;
    their ids come back per group, in order."""
    rows, ids = citation_rows(groups, run_id=run_id)
    if rows:  # ids are made here, so nothing needs to come back from the batch
        execute(conn, "add_citations", citations=json.dumps(rows, default=str))
    return ids


def citation_rows(
    groups: Sequence[tuple[CitingVersion, Sequence[Cite], UUID | None]],
    *,
    run_id: UUID | None = None,
) -> tuple[list[dict[str, object]], list[list[UUID]]]:
    """The rows ``add_citations`` inserts for the groups (ids made here), and their ids
    per group, in order."""
    made = [(uuid4(), version, cite, claim_id) for version, cites, claim_id in groups for cite in cites]
    rows: list[dict[str, object]] = [
        {
            "id": citation_id,
            "node_version_id": version["id"],
            "evidence_id": cite.evidence,
            "branch_id": version["branch_id"],
            "claim_id": claim_id,
            "run_id": run_id,
            "role": cite.role,
            "interpretation": cite.interpretation,
        }
        for citation_id, version, cite, claim_id in made
    ]
    ids = iter(citation_id for citation_id, *_ in made)
    return rows, [[next(ids) for _ in cites] for _, cites, _ in groups]
