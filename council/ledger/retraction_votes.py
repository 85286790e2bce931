"""Votes on retraction proposals (docs/architecture.md §5): who may vote, the vote as
written, the voting runs as independence grouping sees them, and what a review run
is shown of a proposal. The ledger only reads and writes: grouping the voters is
the domain's (``council.domain.independence.group_runs``, called by the services).
Named SQL: council/sql/retraction.sql on the unit's psycopg connection."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TypedDict
from uuid import UUID

from council.domain import votes
from council.domain.independence import GroupingParams, RunFacts
from council.domain.results.retraction import Proposal, Vote
from council.domain.votes import ProposalFacts
from council.ledger import events
from council.ledger.consolidations import ConsolidationRow
from council.ledger.lookup import require_row
from council.ledger.pg import Connection, column, fetch, fetch_one


class _VoterRow(TypedDict):
    run_id: UUID
    vote: str
    confidence: Decimal
    provider: str
    parent_run_id: UUID | None
    input_fingerprint: list[str] | None


class _Exposure(TypedDict):
    run_id: UUID
    exposed_to_run_id: UUID


class _VoteRow(TypedDict):
    id: UUID
    proposal_id: UUID
    run_id: UUID
    vote: str
    confidence: Decimal
    rationale: str
    created_at: datetime


class _EvidenceRow(TypedDict):
    id: UUID
    title: str
    validity: str


class _Content(TypedDict):
    content: str


class _Run(TypedDict):
    id: UUID
    thread_id: UUID


class BriefedEvidence(TypedDict):
    id: str
    title: str
    validity: str


class Briefing(TypedDict):
    """What a review run is shown of a proposal (no votes: review is blind)."""

    id: str
    reason: str
    consolidation_id: str
    node_version_id: str
    content: str
    evidence: list[BriefedEvidence]


@dataclass(frozen=True)
class Voters:
    """The runs that voted on a proposal, as independence grouping sees them (a vote is
    the run's stance), and the grouping the proposal pinned. The domain groups them
    (``council.domain.independence.group_runs``)."""

    runs: list[RunFacts]
    params: GroupingParams


def proposal(conn: Connection, proposal_id: UUID) -> Proposal:
    """The proposal's row, or NotFound."""
    return require_row(conn, "retraction_proposals", Proposal, proposal_id, "retraction proposal")


def check_vote(conn: Connection, proposal_id: UUID, run: _Run) -> Proposal:
    """The proposal, if ``run`` may vote on it now (same thread, open, not yet
    voted by this run); otherwise BadInput. Writes nothing."""
    found = fetch_one(conn, "lookup_retraction_proposals", Proposal, id=proposal_id)
    votes.check_vote(run["id"], run["thread_id"], proposal_id, _vote_facts(conn, found, run["id"]))
    assert found is not None  # check_vote refuses a missing proposal
    return found


def vote_facts(conn: Connection, proposal_id: UUID, run_id: UUID) -> ProposalFacts | None:
    """What a vote of ``run_id`` on the proposal is checked against (None: no such proposal)."""
    found = fetch_one(conn, "lookup_retraction_proposals", Proposal, id=proposal_id)
    return _vote_facts(conn, found, run_id)


def _vote_facts(conn: Connection, found: Proposal | None, run_id: UUID) -> ProposalFacts | None:
    if found is None:
        return None
    voted = column(conn, "run_voted_on", UUID, proposal_id=found.id, run_id=run_id)
    return ProposalFacts(thread_id=found.thread_id, status=found.status, voted=bool(voted))


def record_vote(
    conn: Connection,
    proposal_id: UUID,
    run_id: UUID,
    *,
    choice: str,
    confidence: Decimal | float,
    rationale: str,
    actor: str,
) -> Vote:
    """Write a run's vote, checked first (:func:`check_vote`), with its event."""
    run = require_row(conn, "agent_runs", _Run, run_id, "run")
    found = check_vote(conn, proposal_id, run)
    [row] = fetch(
        conn,
        "add_retraction_vote",
        _VoteRow,
        proposal_id=proposal_id,
        run_id=run_id,
        vote=choice,
        confidence=confidence,
        rationale=rationale,
    )
    events.append(
        conn,
        "retraction.voted",
        actor=actor,
        thread_id=found.thread_id,
        subject_id=row["id"],
        payload={"proposal_id": str(proposal_id), "run_id": str(run_id), "vote": choice},
    )
    return Vote.model_validate(row)


def briefing(conn: Connection, proposal_id: UUID) -> Briefing:
    """What a review run is shown of a proposal: its reason, the consolidated
    node's content and the consolidation's evidence (by its index) with each
    item's current validity. No votes: review is blind."""
    found = proposal(conn, proposal_id)
    consolidation = require_row(
        conn, "consolidations", ConsolidationRow, found.consolidation_id, "consolidation"
    )
    version = require_row(conn, "node_versions", _Content, consolidation["node_version_id"], "node version")
    evidence = fetch(
        conn,
        "proposal_evidence",
        _EvidenceRow,
        thread_id=found.thread_id,
        consolidation_id=consolidation["id"],
    )
    return {
        "id": str(proposal_id),
        "reason": found.reason,
        "consolidation_id": str(consolidation["id"]),
        "node_version_id": str(consolidation["node_version_id"]),
        "content": version["content"],
        "evidence": [{"id": str(e["id"]), "title": e["title"], "validity": e["validity"]} for e in evidence],
    }


def voters(conn: Connection, found: Proposal) -> Voters:
    """The proposal's voting runs as independence grouping sees them, with its pinned grouping."""
    rows = fetch(conn, "proposal_voters", _VoterRow, proposal_id=found.id)
    exposed: dict[str, set[str]] = {}
    if rows:
        for e in fetch(conn, "stance_exposures_of", _Exposure, run_ids=[r["run_id"] for r in rows]):
            exposed.setdefault(str(e["run_id"]), set()).add(str(e["exposed_to_run_id"]))
    facts = [
        RunFacts(
            run_id=str(r["run_id"]),
            provider=r["provider"],
            stance=r["vote"],  # endorse, dispute or abstain: a vote is the run's stance
            confidence=float(r["confidence"]),
            parent_run_id=str(r["parent_run_id"]) if r["parent_run_id"] else None,
            exposed_to=frozenset(exposed.get(str(r["run_id"]), ())),
            input_features=frozenset(r["input_fingerprint"] or ()),
        )
        for r in rows
    ]
    [params] = column(conn, "grouping_params", dict, id=found.grouping_algorithm_id)
    return Voters(facts, GroupingParams.from_record(params))
