"""The agent output contract (docs/architecture.md §7), published as JSON Schema in
``schema/agent-output.schema.json``.

A run answers with exactly one JSON document of this shape. The schema is
checked here; references to ledger rows (node versions, evidence, branches,
logical nodes, retraction proposals) are checked against the ledger before anything is written
(``council.ledger.apply_output``). Anything invalid fails the run with a
stored reason after one bounded re-prompt.

Ids are ledger UUIDs as strings. Inside one output, a new node may be named
by its ``ref`` and edges may point at ``ref:<ref>``; ``edges`` join versions that
exist (or start at a new node's ``ref:``), e.g. two rival answers (``contradicts``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

MAX_TEXT = 20_000
MAX_NOTE = 4_000

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TEXT)]
Note = Annotated[str, StringConstraints(strip_whitespace=True, max_length=MAX_NOTE)]
Label = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Ref = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$")]
Confidence = Annotated[float, Field(ge=0.0, le=1.0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NewEvidence(_Strict):
    title: Label
    content: Text


class CitationOut(_Strict):
    """Existing evidence by id, or new evidence content; role and reading are branch-local."""

    evidence_id: str | None = None
    new_evidence: NewEvidence | None = None
    role: Literal["supports", "contradicts", "context", "method"] = "supports"
    interpretation: Note = ""

    @model_validator(mode="after")
    def _one_source(self) -> CitationOut:
        if (self.evidence_id is None) == (self.new_evidence is None):
            raise ValueError("a citation names exactly one of evidence_id or new_evidence")
        return self


class EdgeOut(_Strict):
    kind: Literal["supports", "contradicts", "depends_on", "refines", "supersedes"]
    to: str = Field(description="a node version id, or ref:<ref> of a new node in this output")


class EdgeBetween(_Strict):
    """An edge between versions that exist (or from a new node of this output), e.g. two
    answers that cannot both hold (``contradicts``: they become rival alternatives,
    docs/architecture.md §4) or one that says the same as another in other words (``refines``)."""

    node_version_id: str = Field(description="the version the edge starts at, or ref:<ref> of a new node")
    kind: Literal["contradicts", "refines", "supports"]
    to: str = Field(description="an existing node version id of this thread (not the same version)")


class ClaimOut(_Strict):
    node_version_id: str
    type: Literal["endorse", "dispute", "abstain"]
    confidence: Confidence = 0.5
    rationale: Note = ""
    cites: list[CitationOut] = Field(default_factory=list, max_length=10)


class NewNode(_Strict):
    """A new proposition; the run originates it (at ``confidence``, 1 when not given)."""

    ref: Ref
    content: Text
    status: Literal["open", "tentative"] = "open"
    confidence: Confidence | None = None
    branch_id: str | None = None
    edges: list[EdgeOut] = Field(default_factory=list, max_length=20)
    cites: list[CitationOut] = Field(default_factory=list, max_length=10)


class NewVersion(_Strict):
    logical_node_id: str
    content: Text
    status: Literal["open", "tentative"] = "open"
    edges: list[EdgeOut] = Field(default_factory=list, max_length=20)
    cites: list[CitationOut] = Field(default_factory=list, max_length=10)


class ForkOut(_Strict):
    kind: Literal["objective", "node"]
    label: Label
    divergence_type: Literal["objective", "claim", "evidence_interpretation", "acceptance_condition"]
    objective: Text | None = None
    at_version_id: str | None = None


class PendingActionOut(_Strict):
    description: Text
    acceptance_condition: Text
    node_version_id: str | None = None


class VoteOut(_Strict):
    """A vote on a retraction proposal (review mode): endorse = retract, dispute = keep."""

    proposal_id: str
    vote: Literal["endorse", "dispute", "abstain"]
    confidence: Confidence = 0.5
    rationale: Note = ""


class AgentOutput(_Strict):
    """Everything one run says. ``summary`` is prose: it is passed through the
    epistemic linter and its findings are recorded on the run."""

    summary: Note = ""
    claims: list[ClaimOut] = Field(default_factory=list, max_length=50)
    new_nodes: list[NewNode] = Field(default_factory=list, max_length=20)
    new_versions: list[NewVersion] = Field(default_factory=list, max_length=20)
    forks: list[ForkOut] = Field(default_factory=list, max_length=5)
    pending_actions: list[PendingActionOut] = Field(default_factory=list, max_length=10)
    votes: list[VoteOut] = Field(default_factory=list, max_length=5)
    edges: list[EdgeBetween] = Field(default_factory=list, max_length=20)

    @model_validator(mode="after")
    def _unique(self) -> AgentOutput:
        refs = [n.ref for n in self.new_nodes]
        if len(refs) != len(set(refs)):
            raise ValueError("new node refs must be unique")
        targets = [c.node_version_id for c in self.claims]
        if len(targets) != len(set(targets)):
            raise ValueError("at most one claim per node version")
        proposals = [vote.proposal_id for vote in self.votes]
        if len(proposals) != len(set(proposals)):
            raise ValueError("at most one vote per retraction proposal")
        return self


# What a review run may not write: everything but its vote lies outside its proposal.
OUTSIDE_A_REVIEW = ("claims", "new_nodes", "new_versions", "forks", "pending_actions", "edges")


def review_problem(output: AgentOutput, proposal_id: str) -> tuple[str, str] | None:
    """Why ``output`` is no valid answer of a run reviewing ``proposal_id`` — (where,
    reason) — or None. A review answers with its vote on its proposal (and a
    summary), nothing else: no vote is no answer, and a review writes nothing
    outside its proposal. (Whose proposal a vote names is checked against the ledger.)"""
    for key in OUTSIDE_A_REVIEW:
        if getattr(output, key):
            return key, (
                f"a review run writes nothing outside its proposal: only its vote on retraction "
                f"proposal {proposal_id}, no {key.replace('_', ' ')}"
            )
    if not output.votes:
        return "votes", (
            f"a review run answers with its vote on retraction proposal {proposal_id} "
            "(endorse = retract, dispute = keep, abstain); this answer has none"
        )
    return None


def control_view(output: AgentOutput) -> tuple[AgentOutput, dict[str, int]]:
    """What of a control run's answer is applied — its claims on node versions that exist
    — and how many items of each other part were left out. A control run re-runs a
    deliberative run's profile on the same request without the round's stances, only to
    record the stances it takes (never counted as support); what else it says is kept in its
    answer, not added to the graph the council works on. Its request says nothing different
    (a control is the same question), so its answer may well propose more."""
    claims = [c for c in output.claims if not c.node_version_id.startswith("ref:")]
    left = {key: len(getattr(output, key)) for key in _OUTSIDE_A_CONTROL}
    left["claims"] = len(output.claims) - len(claims)
    kept = output.model_copy(update={key: [] for key in _OUTSIDE_A_CONTROL} | {"claims": claims})
    return kept, {key: n for key, n in left.items() if n}


_OUTSIDE_A_CONTROL = ("new_nodes", "new_versions", "forks", "pending_actions", "votes", "edges")


def output_json_schema() -> dict[str, object]:
    schema = AgentOutput.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "agent-output.schema.json"
    return schema


def cited_evidence(output: AgentOutput) -> list[str]:
    """Every existing evidence id the output cites (claims, new nodes, new versions), each
    once, in order; evidence the output brings itself (``new_evidence``) is not among them."""
    cites = [c for claim in output.claims for c in claim.cites]
    cites += [c for node in output.new_nodes for c in node.cites]
    cites += [c for version in output.new_versions for c in version.cites]
    return list(dict.fromkeys(c.evidence_id for c in cites if c.evidence_id is not None))
