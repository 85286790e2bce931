"""Evidence: global and content-addressed (invariant 1), linked to threads.
Named SQL: council/sql/evidence_store.sql."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from council.domain import validate as v
from council.domain.canonical import sha256_text
from council.domain.results.evidence import EvidenceAdded, EvidenceShown
from council.domain.source import Source, checked_size
from council.errors import NotFound
from council.known_secrets import refuse_known_secret
from council.ledger.events import append
from council.ledger.lookup import require
from council.ledger.pg import Connection, Row, column, fetch, fetch_one


class EvidenceStore:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def add(self, *, thread_id: UUID, source: Source, title: str | None, actor: str) -> EvidenceAdded:
        """Link the evidence with this content to the thread, storing the content
        only the first time it is seen anywhere (same content, same row)."""
        return add_evidence(self._conn, thread_id=thread_id, source=source, title=title, actor=actor)

    def show(self, evidence_id: UUID) -> EvidenceShown:
        """One item in full: content, validity and its history, the threads it is in."""
        conn = self._conn
        row = fetch_one(conn, "evidence_row", Row, evidence_id=evidence_id)
        if row is None:
            raise NotFound(f"no evidence with id {evidence_id}")
        threads = fetch(conn, "evidence_threads", Row, evidence_id=evidence_id)
        history = fetch(conn, "evidence_history", Row, evidence_id=evidence_id)
        return EvidenceShown.model_validate(
            {
                **row,
                "sha256": row["content_sha256"],
                "threads": threads,
                "validity_history": history,
            }
        )

    def contents(self, evidence_ids: Sequence[str]) -> dict[str, str]:
        """The stored text of each item by id, as its hash addresses it (an item stored
        only as a URL is its reference), for an agent CLI's working directory."""
        if not evidence_ids:
            return {}
        rows = fetch(
            self._conn, "evidence_contents", _Content, evidence_ids=[UUID(str(i)) for i in evidence_ids]
        )
        return {str(r.id): r.content if r.content is not None else f"reference:{r.source_uri}" for r in rows}

    def ids_of_thread(self, thread_id: UUID) -> set[UUID]:
        return thread_evidence_ids(self._conn, thread_id)


def add_evidence(
    conn: Connection, *, thread_id: UUID, source: Source, title: str | None, actor: str
) -> EvidenceAdded:
    """:meth:`EvidenceStore.add`; also called by the output writer for evidence a run supplies."""
    if source.content is not None:  # addressed by its content, which is never altered
        refuse_known_secret(source.content, "the evidence's content")
    size = checked_size(source)
    title = v.text(title if title is not None else source.suggested_title, "title", v.MAX_TITLE)
    digest = content_hash(source)
    require(conn, "threads", thread_id, "thread")
    stored = column(
        conn,
        "add_evidence",
        UUID,
        content_sha256=digest,
        content=source.content,
        source_kind=source.kind,
        source_uri=source.uri,
        media_type=source.media_type,
        byte_size=size,
        fetched_at=source.fetched_at,
        title=title,
    )
    inserted = stored[0] if stored else None
    if inserted is None:
        [evidence_id] = column(conn, "evidence_of_hash", UUID, content_sha256=digest)
    else:
        evidence_id = inserted
    found = column(
        conn, "link_evidence", UUID, thread_id=thread_id, evidence_id=evidence_id, title=title, added_by=actor
    )
    linked = found[0] if found else None
    if linked is not None:
        append(
            conn,
            "evidence.added",
            actor=actor,
            thread_id=thread_id,
            subject_id=evidence_id,
            payload={"sha256": digest, "title": title, "new_content": inserted is not None},
        )
    return EvidenceAdded(
        id=evidence_id,
        sha256=digest,
        title=title,
        thread_id=thread_id,
        new_content=inserted is not None,
        already_in_thread=linked is None,
    )


def content_hash(source: Source) -> str:
    """The address of a piece of evidence: its text, or the reference itself when
    only a URL was stored."""
    if source.content is not None:
        return sha256_text(source.content)
    return sha256_text(f"reference:{source.uri}")


def thread_evidence_ids(conn: Connection, thread_id: UUID) -> set[UUID]:
    return set(column(conn, "thread_evidence_ids", UUID, thread_id=thread_id))


@dataclass(frozen=True, slots=True)
class _Content:
    id: UUID
    content: str | None
    source_uri: str | None
