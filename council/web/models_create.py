"""Request bodies of the routes that create ledger records (`council/web/routes_create.py`).

They carry what the CLI's options carry; the domain's commands check the
values (a bad one is 422, an unknown id 404), as they do for the CLI.
"""

from __future__ import annotations

from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from council.domain.vocabulary import CITATION_ROLES, CLAIM_TYPES, EDGE_KINDS, NEW_NODE_STATUSES


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ThreadIn(_Body):
    title: str = Field(description="A short title.")
    objective: str = Field(description="The question the thread works on.")


class EvidenceIn(_Body):
    """Exactly one of ``text`` or ``url`` (a file is read by the CLI only: the server reads no paths)."""

    text: str | None = Field(default=None, description="The evidence's content.")
    url: str | None = Field(
        default=None, description="An http(s) URL, fetched within a deadline and size cap."
    )
    fetch: bool = Field(default=True, description="With a URL: fetch it (false: store the reference only).")
    title: str | None = Field(default=None, description="Title (default: first line or URL).")


class EdgeIn(_Body):
    kind: str = Field(json_schema_extra={"enum": list(EDGE_KINDS)})
    to: UUID = Field(description="The node version the edge points at.")


class _Content(_Body):
    content: str = Field(description="The proposition.")
    status: str = Field(default="open", json_schema_extra={"enum": list(NEW_NODE_STATUSES)})
    edges: list[EdgeIn] = Field(default_factory=list, max_length=200)
    cites: list[UUID] = Field(default_factory=list, max_length=200, description="Evidence ids.")
    role: str = Field(default="supports", json_schema_extra={"enum": list(CITATION_ROLES)})
    interpretation: str = Field(default="", description="How the cited evidence is read.")
    run_id: UUID | None = Field(default=None, description="The run that originates (or wrote) it.")


class NodeIn(_Content):
    depends_on: list[UUID] = Field(default_factory=list, max_length=200, description="Version ids.")
    contradicts: list[UUID] = Field(
        default_factory=list,
        max_length=200,
        description="Rivals' version ids, of this thread: both cannot hold (`node add --contradicts`).",
    )
    branch_id: UUID | None = Field(default=None, description="Branch (default: main).")


class VersionIn(_Content):
    pass


class RunIn(_Body):
    """A run made outside the workers (like `council run record`)."""

    agent: str = Field(description="Agent name, e.g. claude.")
    model: str = Field(description="Model string, e.g. anthropic/claude-sonnet-4-6.")
    provider: str | None = Field(default=None, description="Model provider (default: inferred).")
    parent_run_id: UUID | None = None
    exposed_to: list[UUID] = Field(
        default_factory=list, max_length=200, description="Runs whose stances it was shown."
    )
    round: int = Field(default=1, ge=1, le=1000)


class ClaimIn(_Body):
    node_version_id: UUID
    type: str = Field(json_schema_extra={"enum": list(CLAIM_TYPES)})
    confidence: float | None = Field(default=None, description="0..1 (default 0.5).")
    rationale: str = ""
    cites: list[UUID] = Field(default_factory=list, max_length=200, description="Evidence ids.")
    interpretation: str = Field(default="", description="How the cited evidence is read.")
