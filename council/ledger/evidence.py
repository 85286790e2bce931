"""Evidence: global and content-addressed (invariant 1), linked to threads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from uuid import UUID

from sqlalchemy import Connection, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from council.domain import validate as v
from council.domain.canonical import sha256_text
from council.domain.results.evidence import EvidenceAdded, EvidenceShown
from council.domain.source import Source, checked_size
from council.known_secrets import process_redactor
from council.ledger import tables as t
from council.ledger.events import append
from council.ledger.lookup import require


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
        row = dict(require(conn, t.evidence, evidence_id, "evidence"))
        threads = conn.execute(
            select(t.thread_evidence.c.thread_id, t.thread_evidence.c.title)
            .where(t.thread_evidence.c.evidence_id == evidence_id)
            .order_by(t.thread_evidence.c.created_at)
        ).mappings()
        history = conn.execute(
            select(t.evidence_transitions)
            .where(t.evidence_transitions.c.evidence_id == evidence_id)
            .order_by(t.evidence_transitions.c.created_at)
        ).mappings()
        return EvidenceShown.model_validate(
            {
                **row,
                "sha256": row["content_sha256"],
                "threads": [dict(r) for r in threads],
                "validity_history": [dict(r) for r in history],
            }
        )

    def contents(self, evidence_ids: Sequence[str]) -> dict[str, str]:
        """The stored text of each item by id, as its hash addresses it (an item stored
        only as a URL is its reference), for an agent CLI's working directory."""
        if not evidence_ids:
            return {}
        rows = self._conn.execute(
            select(t.evidence.c.id, t.evidence.c.content, t.evidence.c.source_uri).where(
                t.evidence.c.id.in_([UUID(str(i)) for i in evidence_ids])
            )
        )
        return {str(r.id): r.content if r.content is not None else f"reference:{r.source_uri}" for r in rows}

    def ids_of_thread(self, thread_id: UUID) -> set[UUID]:
        return thread_evidence_ids(self._conn, thread_id)


def add_evidence(
    conn: Connection, *, thread_id: UUID, source: Source, title: str | None, actor: str
) -> EvidenceAdded:
    """:meth:`EvidenceStore.add`; also called by the output writer for evidence a run supplies."""
    if source.content is not None:  # known secrets out before the address is taken
        source = replace(source, content=process_redactor().redact(source.content))
    size = checked_size(source)
    title = v.text(title if title is not None else source.suggested_title, "title", v.MAX_TITLE)
    digest = content_hash(source)
    require(conn, t.threads, thread_id, "thread")
    inserted = conn.execute(
        pg_insert(t.evidence)
        .values(
            content_sha256=digest,
            content=source.content,
            source_kind=source.kind,
            source_uri=source.uri,
            media_type=source.media_type,
            byte_size=size,
            fetched_at=source.fetched_at,
            title=title,
        )
        .on_conflict_do_nothing(index_elements=["content_sha256"])
        .returning(t.evidence.c.id)
    ).scalar_one_or_none()
    evidence_id = (
        inserted
        or conn.execute(select(t.evidence.c.id).where(t.evidence.c.content_sha256 == digest)).scalar_one()
    )
    linked = conn.execute(
        pg_insert(t.thread_evidence)
        .values(thread_id=thread_id, evidence_id=evidence_id, title=title, added_by=actor)
        .on_conflict_do_nothing()
        .returning(t.thread_evidence.c.evidence_id)
    ).scalar_one_or_none()
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
    rows = conn.execute(
        select(t.thread_evidence.c.evidence_id).where(t.thread_evidence.c.thread_id == thread_id)
    )
    return {r[0] for r in rows}
