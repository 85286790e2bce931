"""Commands: the validated input of a write, built by a face and carried whole
to the ledger (no face passes ten keyword arguments through two layers).

A command checks its own values on construction (one-line ``BadInput``
reasons, before anything is opened); references to ledger rows are ids, whole
or as unique prefixes (``IdRef``), which the ledger resolves and checks in the
writing transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from uuid import UUID

from council.domain import validate as v
from council.domain.vocabulary import CITATION_ROLES, CLAIM_TYPES, EDGE_KINDS, NEW_NODE_STATUSES
from council.errors import BadInput

IdRef = str | UUID  # a whole id or a unique prefix of at least six hex digits

# What a citation attached to a claim means, by claim type.
CLAIM_CITATION_ROLE = {
    "originate": "supports",
    "endorse": "supports",
    "dispute": "contradicts",
    "abstain": "context",
}


@dataclass(frozen=True)
class Cite:
    """One citation: which evidence, and this branch's reading of it.
    ``role=None`` takes the default of where it is attached (e.g. the claim type)."""

    evidence: IdRef
    role: str | None = None
    interpretation: str = ""

    def resolved_role(self, default_role: str) -> Cite:
        return Cite(
            self.evidence,
            v.choice(self.role or default_role, "citation role", CITATION_ROLES),
            v.text(self.interpretation, "interpretation", v.MAX_RATIONALE, allow_empty=True),
        )


def same_reading(
    evidence: Sequence[IdRef], role: str | None = None, interpretation: str = ""
) -> tuple[Cite, ...]:
    """Several evidence items cited with one role and one reading."""
    return tuple(Cite(item, role, interpretation) for item in evidence)


def checked_cites(cites: Sequence[Cite], default_role: str) -> tuple[Cite, ...]:
    """Validated citations with their roles resolved (before any write)."""
    v.count(cites, "citations")
    return tuple(cite.resolved_role(default_role) for cite in cites)


def _edges(edges: Sequence[tuple[str, IdRef]]) -> tuple[tuple[str, IdRef], ...]:
    for kind, _ in edges:
        v.choice(kind, "edge kind", EDGE_KINDS)
    v.count(edges, "edges")
    return tuple(edges)


@dataclass(frozen=True)
class NewNode:
    """A logical node and its first version; a node made by a run is originated by it."""

    thread: IdRef
    content: str
    status: str = "open"
    branch: IdRef | None = None
    edges: tuple[tuple[str, IdRef], ...] = ()  # depends_on links are edges of kind depends_on
    cites: tuple[Cite, ...] = ()
    run: IdRef | None = None
    confidence: float | str | None = None  # the originating run's confidence in it (default 1)
    level: Decimal = field(init=False, repr=False, compare=False)  # its originate claim's, as stored

    def __post_init__(self) -> None:
        object.__setattr__(self, "content", v.text(self.content, "content", v.MAX_CONTENT))
        object.__setattr__(self, "level", v.confidence(self.confidence, default=1.0))
        v.choice(self.status, "status", NEW_NODE_STATUSES)
        object.__setattr__(self, "edges", _edges(self.edges))
        object.__setattr__(self, "cites", checked_cites(self.cites, "supports"))


@dataclass(frozen=True)
class NewVersion:
    """A content change of a logical node: a new immutable version (never an edit)."""

    logical_node: IdRef
    content: str
    status: str = "open"
    edges: tuple[tuple[str, IdRef], ...] = ()
    cites: tuple[Cite, ...] = ()
    run: IdRef | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "content", v.text(self.content, "content", v.MAX_CONTENT))
        v.choice(self.status, "status", NEW_NODE_STATUSES)
        object.__setattr__(self, "edges", _edges(self.edges))
        object.__setattr__(self, "cites", checked_cites(self.cites, "supports"))


@dataclass(frozen=True)
class NewClaim:
    """A run's stance on a node version, with its citations."""

    version: IdRef
    claim_type: str
    confidence: float | str | None = None
    rationale: str = ""
    cites: tuple[Cite, ...] = ()
    level: Decimal = field(init=False, repr=False, compare=False)  # the confidence as stored

    def __post_init__(self) -> None:
        v.choice(self.claim_type, "claim type", CLAIM_TYPES)
        object.__setattr__(self, "level", v.confidence(self.confidence))
        object.__setattr__(
            self, "rationale", v.text(self.rationale, "rationale", v.MAX_RATIONALE, allow_empty=True)
        )
        object.__setattr__(self, "cites", checked_cites(self.cites, CLAIM_CITATION_ROLE[self.claim_type]))


@dataclass(frozen=True)
class NewFork:
    """An objective-level or node-level fork off an active branch (main by default)."""

    thread: IdRef
    kind: str
    label: str
    divergence_type: str
    objective: str | None = None
    parent_branch: IdRef | None = None
    at_version: IdRef | None = None
    run: IdRef | None = None

    def __post_init__(self) -> None:
        from council.domain.vocabulary import DIVERGENCE_TYPES

        v.choice(self.kind, "branch kind", ("objective", "node"))
        v.choice(self.divergence_type, "divergence type", DIVERGENCE_TYPES)
        object.__setattr__(self, "label", v.text(self.label, "label", v.MAX_TITLE))
        if self.kind == "objective":
            object.__setattr__(self, "objective", v.text(self.objective, "objective", v.MAX_OBJECTIVE))
        elif self.objective:
            raise BadInput("an objective belongs to objective forks only")
        if self.kind == "node" and self.at_version is None:
            raise BadInput("a node fork needs the version it diverges at")


@dataclass(frozen=True)
class NewAction:
    """A pending action with its acceptance condition, on a version's branch (main otherwise)."""

    thread: IdRef
    description: str
    acceptance_condition: str
    version: IdRef | None = None
    run: IdRef | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "description", v.text(self.description, "description", v.MAX_CONTENT))
        object.__setattr__(
            self,
            "acceptance_condition",
            v.text(self.acceptance_condition, "acceptance condition", v.MAX_CONTENT),
        )


@dataclass(frozen=True)
class RecordedRun:
    """A run made outside the workers, with what it had seen (explicit exposures)."""

    thread: IdRef
    agent: str
    model: str
    provider: str | None = None
    parent_run: IdRef | None = None
    exposed_to: tuple[IdRef, ...] = ()
    round_no: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "agent", v.text(self.agent, "agent", v.MAX_NAME))
        object.__setattr__(self, "model", v.text(self.model, "model", v.MAX_NAME * 2))
        if self.provider is not None:
            object.__setattr__(self, "provider", v.text(self.provider, "provider", v.MAX_NAME))
        if self.round_no < 1:
            raise BadInput(f"round must be at least 1, got {self.round_no}")
        v.count(self.exposed_to, "exposures")
