"""The ledger's vocabulary (docs/architecture.md §2): every enumerated value, in one place.

Each set is a ``Literal`` type (for annotations) and the tuple of its values derived from it;
the migration's CHECK constraints enforce the same sets; a unit test keeps the two in step.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

NodeStatus = Literal["open", "tentative", "resolved", "killed", "orphaned"]
NODE_STATUSES: Final[tuple[NodeStatus, ...]] = get_args(NodeStatus)
NewNodeStatus = Literal["open", "tentative"]
NEW_NODE_STATUSES: Final[tuple[NewNodeStatus, ...]] = get_args(NewNodeStatus)
EdgeKind = Literal["supports", "contradicts", "depends_on", "refines", "supersedes"]
EDGE_KINDS: Final[tuple[EdgeKind, ...]] = get_args(EdgeKind)
ClaimType = Literal["originate", "endorse", "dispute", "abstain"]
CLAIM_TYPES: Final[tuple[ClaimType, ...]] = get_args(ClaimType)
SupportClaim = Literal["originate", "endorse"]
SUPPORT_CLAIMS: Final[tuple[SupportClaim, ...]] = get_args(SupportClaim)
CitationRole = Literal["supports", "contradicts", "context", "method"]
CITATION_ROLES: Final[tuple[CitationRole, ...]] = get_args(CitationRole)
BranchKind = Literal["main", "objective", "node"]
BRANCH_KINDS: Final[tuple[BranchKind, ...]] = get_args(BranchKind)
BranchStatus = Literal["active", "merged", "killed", "abandoned"]
BRANCH_STATUSES: Final[tuple[BranchStatus, ...]] = get_args(BranchStatus)
DivergenceType = Literal["objective", "claim", "evidence_interpretation", "acceptance_condition"]
DIVERGENCE_TYPES: Final[tuple[DivergenceType, ...]] = get_args(DivergenceType)
EvidenceValidity = Literal["valid", "challenged", "invalidated", "reaffirmed"]
EVIDENCE_VALIDITY: Final[tuple[EvidenceValidity, ...]] = get_args(EvidenceValidity)
# A validity move: the validity it may start from, and where it goes.
VALIDITY_ACTIONS: Final = {
    "challenge": (("valid", "reaffirmed"), "challenged"),
    "invalidate": (("valid", "reaffirmed", "challenged"), "invalidated"),
    "reaffirm": (("challenged",), "reaffirmed"),
}
RuntimeName = Literal["litellm", "codex-cli", "claude-code"]
RUNTIMES: Final[tuple[RuntimeName, ...]] = get_args(RuntimeName)
RunMode = Literal["external", "independent", "deliberative", "review"]
RUN_MODES: Final[tuple[RunMode, ...]] = get_args(RunMode)
# What a dispatch may be asked to run (council: propose, cross-review, deliberate; migration 0039).
DispatchMode = Literal["independent", "deliberative", "review", "council"]
DISPATCH_MODES: Final[tuple[DispatchMode, ...]] = get_args(DispatchMode)
RunStatus = Literal["created", "queued", "running", "succeeded", "failed"]
RUN_STATUSES: Final[tuple[RunStatus, ...]] = get_args(RunStatus)
TerminalRunStatus = Literal["succeeded", "failed"]
TERMINAL_RUN_STATUSES: Final[tuple[TerminalRunStatus, ...]] = get_args(TerminalRunStatus)
QueueName = Literal["runs", "commit", "maintenance"]
QUEUES: Final[tuple[QueueName, ...]] = get_args(QueueName)
# The council a dispatch (and a retraction's review) calls when none is named.
DEFAULT_COUNCIL: Final = ("claude", "codex", "glm")
# What the committer answers for one node version.
ConsolidationOutcome = Literal["committed", "already_consolidated", "not_ready", "would_commit"]
CONSOLIDATION_OUTCOMES: Final[tuple[ConsolidationOutcome, ...]] = get_args(ConsolidationOutcome)
ExposureKind = Literal["stance", "proposition"]
EXPOSURE_KINDS: Final[tuple[ExposureKind, ...]] = get_args(ExposureKind)
ExposureChannel = Literal["briefing", "previous_round", "explicit"]
EXPOSURE_CHANNELS: Final[tuple[ExposureChannel, ...]] = get_args(ExposureChannel)
# How a stance served over MCP arrived: the tool that served it (migration 0010).
MCP_EXPOSURE_CHANNELS: Final = ("mcp:reentry_packet", "mcp:node_status")
PendingActionStatus = Literal["open", "satisfied", "cancelled"]
PENDING_ACTION_STATUSES: Final[tuple[PendingActionStatus, ...]] = get_args(PendingActionStatus)
ConsolidationStatus = Literal["live", "superseded", "retracted"]
CONSOLIDATION_STATUSES: Final[tuple[ConsolidationStatus, ...]] = get_args(ConsolidationStatus)
MemoryStatus = Literal["stable", "provisional", "contested", "retracted", "superseded"]
MEMORY_STATUSES: Final[tuple[MemoryStatus, ...]] = get_args(MemoryStatus)
ProposalStatus = Literal["open", "retracted", "restored", "superseded"]
PROPOSAL_STATUSES: Final[tuple[ProposalStatus, ...]] = get_args(ProposalStatus)
Vote = Literal["endorse", "dispute", "abstain"]
VOTES: Final[tuple[Vote, ...]] = get_args(Vote)

# Node status moves a person or agent may make directly. `resolved` is only
# ever written by the committer (invariant 7); `orphaned` by branch handling.
MANUAL_NODE_MOVES: Final = {
    "open": ("tentative", "killed"),
    "tentative": ("open", "killed"),
}
