"""Claims: agreement and disagreement are appended, never applied (invariant 4).
Named SQL: council/sql/claim_store.sql."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict
from uuid import UUID, uuid4

from council.domain.commands import Cite, IdRef, NewClaim
from council.domain.results.graph import Claim, ClaimAdded
from council.errors import BadInput, NotFound
from council.ledger.citations import (
    CitingVersion,
    check_cited,
    citation_rows,
    insert_citations_many,
    resolved,
)
from council.ledger.events import append_many
from council.ledger.held_runs import HandRun, hold_by_hand
from council.ledger.lookup import require_row, resolve
from council.ledger.nodes import VersionRow
from council.ledger.pg import Connection, fetch
from council.ledger.run_phases import DeferredClaims


class Claims:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def add(
        self, run: IdRef, claims: Sequence[NewClaim], *, actor: str, held: bool = False
    ) -> list[ClaimAdded]:
        """Claims of one run, checked first, then written set-based: one statement
        each for the claims, their citations and their events, whatever their
        number (an agent's output claims on dozens of versions at once). By hand
        (``held`` false) only on a run recorded by hand that ``actor`` holds open
        (:func:`hold_by_hand`); ``held``: the caller fenced the run in this transaction (a
        worker's output, an MCP session's submission)."""
        conn = self._conn
        run_id = resolve(conn, "agent_runs", run, "run")
        row = require_row(conn, "agent_runs", HandRun, run_id, "run", lock=True)
        checked = [_resolved(conn, claim) for claim in claims]  # an unknown id first: not found
        if not held:
            hold_by_hand(conn, row, actor)
        if not checked:
            return []
        version_ids = [UUID(str(claim.version)) for claim in checked]
        versions = _versions_of_thread(conn, version_ids, run_id, row["thread_id"])
        repeated = next((vid for i, vid in enumerate(version_ids) if vid in version_ids[:i]), None)
        existing = claimed_by_run(conn, run_id, version_ids)
        if repeated is not None or existing:
            version_id = repeated if repeated is not None else next(iter(existing))
            made = existing.get(version_id, "in this batch")
            raise BadInput(
                f"run {run_id} already made a claim ({made}) on node version {version_id}: "
                "a run claims once per version"
            )
        check_cited(conn, row["thread_id"], [UUID(str(c.evidence)) for claim in checked for c in claim.cites])
        return write_checked_claims(conn, run=row, claims=checked, versions=versions, actor=actor)


def _resolved(conn: Connection, claim: NewClaim) -> NewClaim:
    version = resolve(conn, "node_versions", claim.version, "node version")
    return NewClaim(
        version, claim.claim_type, claim.confidence, claim.rationale, tuple(resolved(conn, claim.cites))
    )


def write_checked_claims(
    conn: Connection,
    *,
    run: Mapping[str, Any],
    claims: Sequence[NewClaim],
    versions: Mapping[UUID, CitingVersion],
    actor: str,
    later: list[dict[str, Any]] | None = None,
) -> list[ClaimAdded]:
    """Claims whose references the caller has checked in this same transaction
    (the output writer's check: versions in the run's thread and not claimed by
    it yet, evidence attached): ``versions`` are the rows it found, by id.
    ``later``: their claim.added events are handed to it (kind, actor, subject,
    payload) for the caller to append in the same transaction, instead of here."""
    if not claims:
        return []
    run_id = run["id"]
    keys = [uuid4() for _ in claims]  # client-side keys put the batch's returned rows back in order
    returned = {
        row.id: row
        for row in fetch(conn, "add_claims", Claim, run_id=run_id, claims=json.dumps(_values(keys, claims)))
    }
    rows = [returned[key] for key in keys]
    citation_ids = insert_citations_many(conn, _citing(versions, claims, keys), run_id=run_id)
    items = _announced(run_id, claims, keys, citation_ids)
    if later is not None:
        later += [
            {"kind": "claim.added", "actor": actor, "subject_id": str(subject), "payload": payload}
            for subject, payload in items
        ]
    else:
        append_many(conn, "claim.added", actor=actor, thread_id=run["thread_id"], items=items)
    return [ClaimAdded(**dict(row), citation_ids=ids) for row, ids in zip(rows, citation_ids, strict=True)]


def defer_checked_claims(
    *,
    run: Mapping[str, object],
    claims: Sequence[NewClaim],
    versions: Mapping[UUID, CitingVersion],
    actor: str,
    later: list[dict[str, object]],
    deferred: DeferredClaims,
) -> list[UUID]:
    """As :func:`write_checked_claims` with ``later``, the claims and their citations handed
    to ``deferred`` for the run's end to insert (``council_apply_run_v1``, in the statement
    that ends the run, before its events); their ids, in order."""
    if not claims:
        return []
    run_id = UUID(str(run["id"]))
    keys = [uuid4() for _ in claims]
    rows, citation_ids = citation_rows(_citing(versions, claims, keys), run_id=run_id)
    deferred.claims += _values(keys, claims)
    deferred.citations += rows
    later += [
        {"kind": "claim.added", "actor": actor, "subject_id": str(subject), "payload": payload}
        for subject, payload in _announced(run_id, claims, keys, citation_ids)
    ]
    return keys


def _values(keys: Sequence[UUID], claims: Sequence[NewClaim]) -> list[dict[str, object]]:
    """The rows ``add_claims`` inserts (ids made by the caller)."""
    return [
        {
            "id": str(key),
            "node_version_id": str(UUID(str(claim.version))),
            "claim_type": claim.claim_type,
            "confidence": str(claim.level),
            "rationale": claim.rationale,
        }
        for key, claim in zip(keys, claims, strict=True)
    ]


def _citing(
    versions: Mapping[UUID, CitingVersion], claims: Sequence[NewClaim], keys: Sequence[UUID]
) -> list[tuple[CitingVersion, Sequence[Cite], UUID | None]]:
    return [
        (versions[UUID(str(claim.version))], claim.cites, key)
        for claim, key in zip(claims, keys, strict=True)
    ]


def _announced(
    run_id: UUID, claims: Sequence[NewClaim], keys: Sequence[UUID], citation_ids: Sequence[Sequence[UUID]]
) -> list[tuple[UUID | str, Mapping[str, object]]]:
    """Each claim's claim.added event (subject, payload), as its stored row reads: the
    confidence is the numeric stored (``claim.level``), as a number."""
    return [
        (
            key,
            {
                "run_id": str(run_id),
                "node_version_id": str(UUID(str(claim.version))),
                "claim_type": claim.claim_type,
                "confidence": float(claim.level),
                "citations": len(ids),
            },
        )
        for key, claim, ids in zip(keys, claims, citation_ids, strict=True)
    ]


def _versions_of_thread(
    conn: Connection, version_ids: Sequence[UUID], run_id: UUID, thread_id: UUID
) -> dict[UUID, VersionRow]:
    found = {
        row["id"]: row
        for row in fetch(conn, "versions_by_id", VersionRow, version_ids=list(set(version_ids)))
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
    rows = fetch(conn, "claimed_by_run", _Claimed, run_id=run_id, version_ids=list(version_ids))
    return {row["node_version_id"]: row["claim_type"] for row in rows}


class _Claimed(TypedDict):
    node_version_id: UUID
    claim_type: str
