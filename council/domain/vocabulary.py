"""The ledger's vocabulary (docs/architecture.md §2): every enumerated value, in one place.

The migration's CHECK constraints enforce the same sets; a unit test keeps the
two in step.
"""

from __future__ import annotations

from typing import Final

NODE_STATUSES: Final = ("open", "tentative", "resolved", "killed", "orphaned")
NEW_NODE_STATUSES: Final = ("open", "tentative")
EDGE_KINDS: Final = ("supports", "contradicts", "depends_on", "refines", "supersedes")
CLAIM_TYPES: Final = ("originate", "endorse", "dispute", "abstain")
SUPPORT_CLAIMS: Final = ("originate", "endorse")
CITATION_ROLES: Final = ("supports", "contradicts", "context", "method")
BRANCH_KINDS: Final = ("main", "objective", "node")
BRANCH_STATUSES: Final = ("active", "merged", "killed", "abandoned")
DIVERGENCE_TYPES: Final = ("objective", "claim", "evidence_interpretation", "acceptance_condition")
EVIDENCE_VALIDITY: Final = ("valid", "challenged", "invalidated", "reaffirmed")
# A validity move: the validity it may start from, and where it goes.
VALIDITY_ACTIONS: Final = {
    "challenge": (("valid", "reaffirmed"), "challenged"),
    "invalidate": (("valid", "reaffirmed", "challenged"), "invalidated"),
    "reaffirm": (("challenged",), "reaffirmed"),
}
RUNTIMES: Final = ("litellm", "codex-cli", "claude-code")
RUN_MODES: Final = ("external", "independent", "deliberative", "review")
RUN_STATUSES: Final = ("created", "queued", "running", "succeeded", "failed")
TERMINAL_RUN_STATUSES: Final = ("succeeded", "failed")
QUEUES: Final = ("runs", "commit", "maintenance")
# The council a dispatch (and a retraction's review) calls when none is named.
DEFAULT_COUNCIL: Final = ("claude", "codex", "glm")
# What the committer answers for one node version.
CONSOLIDATION_OUTCOMES: Final = ("committed", "already_consolidated", "not_ready", "would_commit")
EXPOSURE_KINDS: Final = ("stance", "proposition")
EXPOSURE_CHANNELS: Final = ("briefing", "previous_round", "explicit")
# How a stance served over MCP arrived: the tool that served it (migration 0010).
MCP_EXPOSURE_CHANNELS: Final = ("mcp:reentry_packet", "mcp:node_status")
PENDING_ACTION_STATUSES: Final = ("open", "satisfied", "cancelled")
CONSOLIDATION_STATUSES: Final = ("live", "superseded", "retracted")
MEMORY_STATUSES: Final = ("stable", "provisional", "contested", "retracted", "superseded")
PROPOSAL_STATUSES: Final = ("open", "retracted", "restored", "superseded")
VOTES: Final = ("endorse", "dispute", "abstain")

# Node status moves a person or agent may make directly. `resolved` is only
# ever written by the committer (invariant 7); `orphaned` by branch handling.
MANUAL_NODE_MOVES: Final = {
    "open": ("tentative", "killed"),
    "tentative": ("open", "killed"),
}
