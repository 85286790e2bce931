"""Retraction proposals and adjudication (docs/architecture.md §5).

A proposal pins the rule set and grouping version in force when it opens.
Votes are claims of agent runs on the proposal (endorse = retract, dispute =
keep, abstain), grouped by independence like any other claims — by the domain,
from the voters this store reads (``council.ledger.retraction_votes``).
Adjudication is serialized under the same node lock as the committer and
idempotent. Named SQL: council/sql/retraction.sql (and open_retractions in
reversal.sql) on the unit's psycopg connection.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TypedDict, cast
from uuid import UUID

from council.domain import validate as v
from council.domain.counterfactual import RuleSet
from council.domain.results.retraction import Proposal, Vote
from council.domain.vocabulary import VOTES
from council.errors import BadInput
from council.ledger import events
from council.ledger.alternatives import Alternatives
from council.ledger.consolidations import ConsolidationRow
from council.ledger.locks import lock_node
from council.ledger.lookup import require_row
from council.ledger.memory import MemoryState, move_memory
from council.ledger.pg import Connection, column, execute, fetch
from council.ledger.restore import restore_retraction
from council.ledger.retraction_votes import (
    Briefing,
    Voters,
    briefing,
    proposal,
    record_vote,
    voters,
)


@dataclass(frozen=True)
class ProposalRead:
    """A proposal as the governance page shows it, but for its vote groups: ``shown``
    holds every other field of ``ProposalShown``."""

    shown: Mapping[str, object]
    voters: Voters


@dataclass(frozen=True)
class Pins:
    """A rule set and grouping version to pin a new proposal to, instead of the
    thread's (settings: COUNCIL_RULE_SET / COUNCIL_GROUPING_ALGORITHM)."""

    rule_set_id: str | None = None
    grouping_algorithm_id: str | None = None


class _Pinned(TypedDict):
    rule_set_id: str
    grouping_algorithm_id: str


class _Opened(TypedDict):
    consolidation_id: UUID
    id: UUID


class _ShownProposal(Proposal):
    """A proposal with its consolidation's node version and that version's content."""

    node_version_id: UUID
    content: str


class _CastVote(TypedDict):
    id: UUID
    proposal_id: UUID
    run_id: UUID
    agent: str
    provider: str
    vote: str
    confidence: Decimal
    rationale: str
    created_at: datetime


class TransitionRow(TypedDict):
    """A row of proposal_transitions: one adjudication step of a proposal."""

    id: UUID
    proposal_id: UUID
    from_status: str
    to_status: str
    reason: str
    actor: str
    details: dict[str, object]
    created_at: datetime


class Awaiting(TypedDict):
    """An open proposal due for an automatic review dispatch."""

    id: UUID
    thread_id: UUID


def default_versions(conn: Connection, thread_id: UUID, pins: Pins = Pins()) -> tuple[str, str]:
    """The rule set and grouping version in force now for a proposal of the thread: the
    ``pins`` when given, else the thread's pinned ones (each checked to exist)."""
    thread = require_row(conn, "threads", _Pinned, thread_id, "thread")
    rule_set = pins.rule_set_id or thread["rule_set_id"]
    grouping = pins.grouping_algorithm_id or thread["grouping_algorithm_id"]
    for name, key, what in (
        ("rule_set_named", rule_set, "rule set"),
        ("grouping_algorithm_named", grouping, "grouping"),
    ):
        if not column(conn, name, str, key=key):
            raise BadInput(f"no {what} named {key!r}")
    return rule_set, grouping


def open_proposal(
    conn: Connection, consolidation: ConsolidationRow, *, reason: str, actor: str, pins: Pins = Pins()
) -> UUID:
    """Open (or return the already open) proposal to retract a consolidation."""
    versions = default_versions(conn, consolidation["thread_id"], pins)
    opened = open_many(
        conn, [(consolidation["id"], consolidation["thread_id"], versions)], reason=reason, actor=actor
    )
    return opened[str(consolidation["id"])]


def open_many(
    conn: Connection,
    consolidations: Sequence[tuple[UUID | str, UUID | str, tuple[str, str]]],
    *,
    reason: str,
    actor: str,
) -> dict[str, UUID]:
    """Open (or find the open) proposal of each (consolidation id, thread id,
    (rule set, grouping) to pin), with its event, in one statement; call under
    the node locks. Proposal ids by consolidation id."""
    proposals = [
        {
            "consolidation_id": str(consolidation_id),
            "thread_id": str(thread_id),
            "reason": reason,
            "rule_set_id": rule_set,
            "grouping_algorithm_id": grouping,
        }
        for consolidation_id, thread_id, (rule_set, grouping) in consolidations
    ]
    found = fetch(conn, "open_retractions", _Opened, proposals=json.dumps(proposals), actor=actor)
    return {str(row["consolidation_id"]): row["id"] for row in found}


class Retractions:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def propose(self, consolidation_id: UUID, *, reason: str, actor: str, pins: Pins = Pins()) -> Proposal:
        """Open a proposal to retract a live consolidation (under its node's lock);
        its memory becomes contested."""
        reason = v.text(reason, "reason", v.MAX_REASON)
        conn = self._conn
        consolidation = _consolidation(conn, consolidation_id)
        lock_node(conn, consolidation["logical_node_id"])
        consolidation = _consolidation(conn, consolidation_id)  # as it is under the lock
        if consolidation["status"] != "live":
            raise BadInput(f"consolidation {consolidation_id} is {consolidation['status']}, not live")
        proposal_id = open_proposal(conn, consolidation, reason=reason, actor=actor, pins=pins)
        memory = _memory(conn, consolidation_id)
        if memory["status"] in ("stable", "provisional"):
            move_memory(
                conn,
                memory,
                "contested",
                f"retraction proposed: {reason}",
                actor,
                {"proposal_id": str(proposal_id)},
            )
        return self.get(proposal_id)

    def get(self, proposal_id: UUID) -> Proposal:
        return proposal(self._conn, proposal_id)

    def vote(
        self,
        proposal_id: UUID,
        run_id: UUID,
        *,
        choice: str,
        actor: str,
        confidence: float | None = None,
        rationale: str = "",
    ) -> Vote:
        """A run's vote (endorse = retract, dispute = keep, abstain)."""
        v.choice(choice, "vote", VOTES)
        level = v.confidence(confidence)
        rationale = v.text(rationale, "rationale", v.MAX_RATIONALE, allow_empty=True)
        return record_vote(
            self._conn, proposal_id, run_id, choice=choice, confidence=level, rationale=rationale, actor=actor
        )

    def of_thread(self, thread_id: UUID) -> list[ProposalRead]:
        """The thread's proposals, oldest first, each with its votes (and the voting
        runs' agents), its transitions and its voters for independence grouping."""
        conn = self._conn
        rows = fetch(conn, "proposals_of_thread", _ShownProposal, thread_id=thread_id)
        ids = [row.id for row in rows]
        cast_votes: dict[UUID, list[_CastVote]] = {i: [] for i in ids}
        history: dict[UUID, list[TransitionRow]] = {i: [] for i in ids}
        if ids:
            for vote in fetch(conn, "votes_of_proposals", _CastVote, ids=ids):
                cast_votes[vote["proposal_id"]].append(vote)
            for step in fetch(conn, "proposal_transitions_of", TransitionRow, ids=ids):
                history[step["proposal_id"]].append(step)
        return [
            ProposalRead(
                {**row.model_dump(), "votes": cast_votes[row.id], "history": history[row.id]},
                voters(conn, row),
            )
            for row in rows
        ]

    def briefing(self, proposal_id: UUID) -> Briefing:
        return briefing(self._conn, proposal_id)

    def awaiting_review(self, *, limit: int) -> list[Awaiting]:
        """Open proposals due for an automatic review dispatch (none dispatched yet;
        the thread's review setting is auto, or delayed and the delay passed), oldest first."""
        return fetch(self._conn, "proposals_awaiting_review", Awaiting, limit=limit)

    def locked_for_adjudication(self, proposal_id: UUID) -> tuple[Proposal, ConsolidationRow]:
        """The proposal and its consolidation, read again under the node's lock
        (adjudication serialises with the committer)."""
        conn = self._conn
        consolidation = _consolidation(conn, proposal(conn, proposal_id).consolidation_id)
        Alternatives(conn).lock(consolidation["thread_id"])  # a restore reads rivals: before the node lock
        lock_node(conn, consolidation["logical_node_id"])
        found = proposal(conn, proposal_id)
        return found, _consolidation(conn, found.consolidation_id)

    def required_groups(self, rule_set_id: str) -> int:
        """How many independent groups one side needs under the rule set."""
        [rules] = fetch(self._conn, "rule_set", RuleSet, id=rule_set_id)
        need = rules.body.get("retraction_min_endorse_groups", 2)
        return int(cast("int | str", need))  # a number in the stored body (checked when stored)

    def voters(self, proposal: Proposal) -> Voters:
        """The proposal's voting runs as independence grouping sees them, with its pinned grouping."""
        return voters(self._conn, proposal)

    def close(
        self,
        proposal: Proposal,
        consolidation: ConsolidationRow,
        outcome: str,
        details: Mapping[str, object],
        actor: str,
    ) -> None:
        """Record the decision: the proposal's transition and, for a retraction,
        the consolidation's, the memory's and the node version's (open again)."""
        _close(self._conn, proposal, consolidation, outcome, details, actor)

    def restore(
        self, proposal: Proposal, consolidation: ConsolidationRow, *, reason: str, actor: str
    ) -> None:
        """Undo the retraction the proposal decided (``council.ledger.restore``)."""
        restore_retraction(self._conn, proposal, consolidation, reason=reason, actor=actor)


def _consolidation(conn: Connection, consolidation_id: UUID) -> ConsolidationRow:
    return require_row(conn, "consolidations", ConsolidationRow, consolidation_id, "consolidation")


def _memory(conn: Connection, consolidation_id: UUID) -> MemoryState:
    [memory] = fetch(conn, "consolidation_memory_item", MemoryState, consolidation_id=consolidation_id)
    return memory


def _close(
    conn: Connection,
    proposal: Proposal,
    consolidation: ConsolidationRow,
    outcome: str,
    details: Mapping[str, object],
    actor: str,
) -> None:
    reason = f"adjudicated: {outcome}"
    execute(
        conn,
        "close_proposal",
        proposal_id=proposal.id,
        to_status=outcome,
        reason=reason,
        actor=actor,
        details=json.dumps(details),
    )
    memory = _memory(conn, consolidation["id"])
    moved = {"proposal_id": str(proposal.id)}
    if outcome == "retracted":
        execute(
            conn, "retract_consolidation", consolidation_id=consolidation["id"], reason=reason, actor=actor
        )
        move_memory(conn, memory, "retracted", reason, actor, moved)
        [current] = column(conn, "version_status", str, version_id=consolidation["node_version_id"])
        if current == "resolved":
            execute(
                conn,
                "reopen_retracted_version",
                node_version_id=consolidation["node_version_id"],
                reason=reason,
                actor=actor,
                consolidation_id=consolidation["id"],
            )
    elif outcome == "restored" and memory["status"] != "stable":
        move_memory(conn, memory, "stable", reason, actor, moved)
    events.append(
        conn,
        f"retraction.{outcome}",
        actor=actor,
        thread_id=proposal.thread_id,
        subject_id=proposal.id,
        payload={
            "consolidation_id": str(consolidation["id"]),
            **{k: v for k, v in details.items() if k != "groups"},
        },
    )
