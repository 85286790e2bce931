"""Use cases of evidence: attach it (read first, outside the transaction) and show it."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from council.adapters import sources
from council.domain.results.evidence import EvidenceAdded, EvidenceShown
from council.domain.source import Source, from_text
from council.errors import BadInput
from council.services.ports import UnitOfWork


@dataclass(frozen=True)
class EvidenceInput:
    """Where new evidence comes from: exactly one of text, a file or a URL."""

    text: str | None = None
    file: str | None = None
    url: str | None = None
    fetch: bool = True  # with a URL: fetch it (False: store the reference only)
    title: str | None = None
    timeout_s: float | None = None  # with a URL: the fetch's total deadline (else the setting)
    allow_private: bool = False  # with a URL: may it (or a redirect) name a private address?

    def source(self) -> Source:
        given = [value for value in (self.text, self.file, self.url) if value is not None]
        if len(given) != 1:
            raise BadInput("give exactly one of text, a file or a URL")
        for what, set_ in (
            ("storing the reference only", not self.fetch),
            ("a fetch deadline", self.timeout_s is not None),
            ("allowing private addresses", self.allow_private),
        ):
            if set_ and self.url is None:
                raise BadInput(f"{what} goes with a URL")
        if self.text is not None:
            return from_text(self.text)
        if self.file is not None:
            return sources.from_file(self.file)
        assert self.url is not None
        if not self.fetch:
            return sources.reference_only(self.url)
        deadline = sources.fetch_timeout(self.timeout_s)
        return sources.from_url(self.url, timeout_s=deadline, allow_private=self.allow_private)


def add_evidence(uow: UnitOfWork, thread: str | UUID, given: EvidenceInput, *, actor: str) -> EvidenceAdded:
    """Attach evidence to a thread; the same content is one evidence row everywhere.
    Files and URLs are read before the transaction opens."""
    source = given.source()
    with uow() as tx:
        return tx.evidence.add(
            thread_id=tx.resolve("thread", thread), source=source, title=given.title, actor=actor
        )


def show_evidence(uow: UnitOfWork, evidence: str | UUID) -> EvidenceShown:
    with uow() as tx:
        return tx.evidence.show(tx.resolve("evidence", evidence))
