"""Who may vote on a retraction proposal (docs/architecture.md §5): a run of the
proposal's thread, while the proposal is open, once."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from council.errors import BadInput, NotFound


@dataclass(frozen=True)
class ProposalFacts:
    """A proposal as a vote on it is checked against."""

    thread_id: UUID
    status: str
    voted: bool  # the voting run already voted on it


def check_vote(run_id: UUID, run_thread_id: UUID, proposal_id: UUID, proposal: ProposalFacts | None) -> None:
    """BadInput (NotFound for no such proposal) unless the run may vote on the proposal now."""
    if proposal is None:
        raise NotFound(f"no retraction proposal with id {proposal_id}")
    if run_thread_id != proposal.thread_id:
        raise BadInput(f"run {run_id} belongs to another thread than proposal {proposal_id}")
    if proposal.status != "open":
        raise BadInput(f"proposal {proposal_id} is {proposal.status}; votes are closed")
    if proposal.voted:
        raise BadInput(f"run {run_id} already voted on proposal {proposal_id}")
