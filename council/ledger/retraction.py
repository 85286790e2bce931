"""Retraction proposals, votes and adjudication (docs/architecture.md §5).

A proposal pins the rule set and grouping version in force when it opens.
Votes are claims of agent runs on the proposal (endorse = retract, dispute =
keep, abstain), grouped by independence like any other claims. Adjudication
is serialized under the same node lock as the committer and idempotent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, func, insert, select

from council.domain import validate as v
from council.domain import votes
from council.domain.independence import GroupingParams, RunFacts
from council.domain.results.retraction import Proposal, Vote
from council.domain.vocabulary import VOTES
from council.domain.votes import ProposalFacts
from council.errors import BadInput
from council.ledger import events
from council.ledger import tables as t
from council.ledger.locks import lock_node
from council.ledger.lookup import require, rows_by_id
from council.ledger.memory import move_memory
from council.ledger.restore import restore_retraction
from council.sql import query


@dataclass(frozen=True)
class Voters:
    """The runs that voted on a proposal, as independence grouping sees them (a vote is
    the run's stance), and the grouping the proposal pinned. The domain groups them
    (``council.domain.independence.group_runs``)."""

    runs: list[RunFacts]
    params: GroupingParams


@dataclass(frozen=True)
class ProposalRead:
    """A proposal as the governance page shows it, but for its vote groups: ``shown``
    holds every other field of ``ProposalShown``."""

    shown: dict[str, Any]
    voters: Voters


@dataclass(frozen=True)
class Pins:
    """A rule set and grouping version to pin a new proposal to, instead of the
    thread's (settings: COUNCIL_RULE_SET / COUNCIL_GROUPING_ALGORITHM)."""

    rule_set_id: str | None = None
    grouping_algorithm_id: str | None = None


def default_versions(conn: Connection, consolidation: Any, pins: Pins = Pins()) -> tuple[str, str]:
    """The rule set and grouping version in force now: the ``pins`` when given,
    else the thread's pinned ones (each checked to exist)."""
    thread = require(conn, t.threads, consolidation["thread_id"], "thread")
    rule_set = pins.rule_set_id or thread["rule_set_id"]
    grouping = pins.grouping_algorithm_id or thread["grouping_algorithm_id"]
    for table, key, what in (
        (t.rule_sets, rule_set, "rule set"),
        (t.grouping_algorithms, grouping, "grouping"),
    ):
        if conn.execute(select(table.c.id).where(table.c.id == key)).first() is None:
            raise BadInput(f"no {what} named {key!r}")
    return rule_set, grouping


def open_proposal(
    conn: Connection, consolidation: Any, *, reason: str, actor: str, pins: Pins = Pins()
) -> UUID:
    """Open (or return the already open) proposal to retract a consolidation."""
    versions = default_versions(conn, consolidation, pins)
    opened = open_many(
        conn, [(consolidation["id"], consolidation["thread_id"], versions)], reason=reason, actor=actor
    )
    return opened[str(consolidation["id"])]


def open_many(
    conn: Connection,
    consolidations: Sequence[tuple[Any, Any, tuple[str, str]]],
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
    found = conn.execute(query("open_retractions"), {"proposals": json.dumps(proposals), "actor": actor})
    return {str(consolidation_id): UUID(str(proposal_id)) for consolidation_id, proposal_id in found}


class Retractions:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def propose(self, consolidation_id: UUID, *, reason: str, actor: str, pins: Pins = Pins()) -> Proposal:
        """Open a proposal to retract a live consolidation (under its node's lock);
        its memory becomes contested."""
        reason = v.text(reason, "reason", v.MAX_REASON)
        conn = self._conn
        consolidation = require(conn, t.consolidations, consolidation_id, "consolidation")
        lock_node(conn, consolidation["logical_node_id"])
        consolidation = (
            conn.execute(select(t.consolidations).where(t.consolidations.c.id == consolidation_id))
            .mappings()
            .one()
        )
        if consolidation["status"] != "live":
            raise BadInput(f"consolidation {consolidation_id} is {consolidation['status']}, not live")
        proposal_id = open_proposal(conn, consolidation, reason=reason, actor=actor, pins=pins)
        memory = dict(
            conn.execute(select(t.memory_items).where(t.memory_items.c.consolidation_id == consolidation_id))
            .mappings()
            .one()
        )
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
        return Proposal.model_validate(
            dict(require(self._conn, t.retraction_proposals, proposal_id, "retraction proposal"))
        )

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
        p, c, nv = t.retraction_proposals, t.consolidations, t.node_versions
        rows = conn.execute(
            select(p, c.c.node_version_id, nv.c.content)
            .join(c, c.c.id == p.c.consolidation_id)
            .join(nv, nv.c.id == c.c.node_version_id)
            .where(p.c.thread_id == thread_id)
            .order_by(p.c.created_at, p.c.id)
        ).mappings()
        shown = []
        for row in [dict(r) for r in rows]:
            votes = conn.execute(
                select(t.retraction_votes, t.agent_runs.c.agent, t.agent_runs.c.provider)
                .join(t.agent_runs, t.agent_runs.c.id == t.retraction_votes.c.run_id)
                .where(t.retraction_votes.c.proposal_id == row["id"])
                .order_by(t.retraction_votes.c.created_at, t.retraction_votes.c.id)
            ).mappings()
            history = conn.execute(
                select(t.retraction_proposal_transitions)
                .where(t.retraction_proposal_transitions.c.proposal_id == row["id"])
                .order_by(t.retraction_proposal_transitions.c.created_at)
            ).mappings()
            shown.append(
                ProposalRead(
                    {**row, "votes": [dict(v) for v in votes], "history": [dict(h) for h in history]},
                    _voters(conn, row),
                )
            )
        return shown

    def briefing(self, proposal_id: UUID) -> dict[str, Any]:
        return proposal_briefing(self._conn, proposal_id)

    def awaiting_review(self, *, limit: int) -> list[dict[str, Any]]:
        """Open proposals due for an automatic review dispatch (none dispatched yet;
        the thread's review setting is auto, or delayed and the delay passed), oldest first."""
        return [
            dict(r)
            for r in self._conn.execute(query("proposals_awaiting_review"), {"limit": limit}).mappings()
        ]

    def locked_for_adjudication(self, proposal_id: UUID) -> tuple[dict[str, Any], dict[str, Any]]:
        """The proposal and its consolidation, read again under the node's lock
        (adjudication serialises with the committer)."""
        conn = self._conn
        proposal = require(conn, t.retraction_proposals, proposal_id, "retraction proposal")
        consolidation = require(conn, t.consolidations, proposal["consolidation_id"], "consolidation")
        lock_node(conn, consolidation["logical_node_id"])
        proposal = (
            conn.execute(select(t.retraction_proposals).where(t.retraction_proposals.c.id == proposal_id))
            .mappings()
            .one()
        )
        consolidation = (
            conn.execute(
                select(t.consolidations).where(t.consolidations.c.id == proposal["consolidation_id"])
            )
            .mappings()
            .one()
        )
        return dict(proposal), dict(consolidation)

    def required_groups(self, rule_set_id: str) -> int:
        """How many independent groups one side needs under the rule set."""
        rules = self._conn.execute(
            select(t.rule_sets.c.body).where(t.rule_sets.c.id == rule_set_id)
        ).scalar_one()
        return int(rules.get("retraction_min_endorse_groups", 2))

    def voters(self, proposal: dict[str, Any]) -> Voters:
        """The proposal's voting runs as independence grouping sees them, with its pinned grouping."""
        return _voters(self._conn, proposal)

    def close(
        self,
        proposal: dict[str, Any],
        consolidation: dict[str, Any],
        outcome: str,
        details: dict[str, Any],
        actor: str,
    ) -> None:
        """Record the decision: the proposal's transition and, for a retraction,
        the consolidation's, the memory's and the node version's (open again)."""
        _close(self._conn, proposal, consolidation, outcome, details, actor)

    def restore(
        self, proposal: dict[str, Any], consolidation: dict[str, Any], *, reason: str, actor: str
    ) -> None:
        """Undo the retraction the proposal decided (``council.ledger.restore``)."""
        restore_retraction(self._conn, proposal, consolidation, reason=reason, actor=actor)


def check_vote(conn: Connection, proposal_id: UUID, run: Any) -> Any:
    """The proposal, if ``run`` may vote on it now (same thread, open, not yet
    voted by this run); otherwise BadInput. Writes nothing."""
    proposal = rows_by_id(conn, t.retraction_proposals, [proposal_id]).get(proposal_id)
    votes.check_vote(run["id"], run["thread_id"], proposal_id, _vote_facts(conn, proposal, run["id"]))
    return proposal


def vote_facts(conn: Connection, proposal_id: UUID, run_id: UUID) -> ProposalFacts | None:
    """What a vote of ``run_id`` on the proposal is checked against (None: no such proposal)."""
    proposal = rows_by_id(conn, t.retraction_proposals, [proposal_id]).get(proposal_id)
    return _vote_facts(conn, proposal, run_id)


def _vote_facts(conn: Connection, proposal: Any, run_id: UUID) -> ProposalFacts | None:
    if proposal is None:
        return None
    voted = conn.execute(
        select(t.retraction_votes.c.id).where(
            t.retraction_votes.c.proposal_id == proposal["id"], t.retraction_votes.c.run_id == run_id
        )
    ).first()
    return ProposalFacts(thread_id=proposal["thread_id"], status=proposal["status"], voted=voted is not None)


def record_vote(
    conn: Connection,
    proposal_id: UUID,
    run_id: UUID,
    *,
    choice: str,
    confidence: Any,
    rationale: str,
    actor: str,
) -> Vote:
    proposal = check_vote(conn, proposal_id, require(conn, t.agent_runs, run_id, "run"))
    row = (
        conn.execute(
            insert(t.retraction_votes)
            .values(
                proposal_id=proposal_id,
                run_id=run_id,
                vote=choice,
                confidence=confidence,
                rationale=rationale,
            )
            .returning(t.retraction_votes)
        )
        .mappings()
        .one()
    )
    events.append(
        conn,
        "retraction.voted",
        actor=actor,
        thread_id=proposal["thread_id"],
        subject_id=row["id"],
        payload={"proposal_id": str(proposal_id), "run_id": str(run_id), "vote": choice},
    )
    return Vote.model_validate(dict(row))


def proposal_briefing(conn: Connection, proposal_id: UUID) -> dict[str, Any]:
    """What a review run is shown of a proposal: its reason, the consolidated
    node's content and the consolidation's evidence (by its index) with each
    item's current validity. No votes: review is blind."""
    proposal = require(conn, t.retraction_proposals, proposal_id, "retraction proposal")
    consolidation = require(conn, t.consolidations, proposal["consolidation_id"], "consolidation")
    content = conn.execute(
        select(t.node_versions.c.content).where(t.node_versions.c.id == consolidation["node_version_id"])
    ).scalar_one()
    evidence = conn.execute(
        select(
            t.evidence.c.id,
            func.coalesce(t.thread_evidence.c.title, t.evidence.c.title).label("title"),
            t.evidence.c.validity,
        )
        .join(t.consolidation_evidence, t.consolidation_evidence.c.evidence_id == t.evidence.c.id)
        .outerjoin(
            t.thread_evidence,
            (t.thread_evidence.c.evidence_id == t.evidence.c.id)
            & (t.thread_evidence.c.thread_id == proposal["thread_id"]),
        )
        .where(t.consolidation_evidence.c.consolidation_id == consolidation["id"])
        .order_by(t.evidence.c.id)
    ).all()
    return {
        "id": str(proposal_id),
        "reason": proposal["reason"],
        "consolidation_id": str(consolidation["id"]),
        "node_version_id": str(consolidation["node_version_id"]),
        "content": content,
        "evidence": [{"id": str(e.id), "title": e.title, "validity": e.validity} for e in evidence],
    }


def _voters(conn: Connection, proposal: Any) -> Voters:
    rows = conn.execute(
        select(
            t.retraction_votes.c.run_id,
            t.retraction_votes.c.vote,
            t.retraction_votes.c.confidence,
            t.agent_runs.c.provider,
            t.agent_runs.c.parent_run_id,
            t.agent_runs.c.input_fingerprint,
        )
        .join(t.agent_runs, t.agent_runs.c.id == t.retraction_votes.c.run_id)
        .where(t.retraction_votes.c.proposal_id == proposal["id"])
    ).all()
    run_ids = [r.run_id for r in rows]
    exposed: dict[str, set[str]] = {}
    if run_ids:
        for e in conn.execute(
            select(t.run_exposures.c.run_id, t.run_exposures.c.exposed_to_run_id).where(
                t.run_exposures.c.run_id.in_(run_ids), t.run_exposures.c.kind == "stance"
            )
        ):
            exposed.setdefault(str(e.run_id), set()).add(str(e.exposed_to_run_id))
    stance = {"endorse": "endorse", "dispute": "dispute", "abstain": "abstain"}
    facts = [
        RunFacts(
            run_id=str(r.run_id),
            provider=r.provider,
            stance=stance[r.vote],
            confidence=float(r.confidence),
            parent_run_id=str(r.parent_run_id) if r.parent_run_id else None,
            exposed_to=frozenset(exposed.get(str(r.run_id), ())),
            input_features=frozenset(r.input_fingerprint or ()),
        )
        for r in rows
    ]
    params = conn.execute(
        select(t.grouping_algorithms.c.params).where(
            t.grouping_algorithms.c.id == proposal["grouping_algorithm_id"]
        )
    ).scalar_one()
    return Voters(facts, GroupingParams.from_record(params))


def _close(
    conn: Connection, proposal: Any, consolidation: Any, outcome: str, details: dict[str, Any], actor: str
) -> None:
    reason = f"adjudicated: {outcome}"
    conn.execute(
        insert(t.retraction_proposal_transitions).values(
            proposal_id=proposal["id"],
            from_status="open",
            to_status=outcome,
            reason=reason,
            actor=actor,
            details=details,
        )
    )
    memory = dict(
        conn.execute(select(t.memory_items).where(t.memory_items.c.consolidation_id == consolidation["id"]))
        .mappings()
        .one()
    )
    if outcome == "retracted":
        conn.execute(
            insert(t.consolidation_transitions).values(
                consolidation_id=consolidation["id"],
                from_status="live",
                to_status="retracted",
                reason=reason,
                actor=actor,
            )
        )
        move_memory(conn, memory, "retracted", reason, actor, {"proposal_id": str(proposal["id"])})
        current = conn.execute(
            select(t.node_version_states.c.status).where(
                t.node_version_states.c.id == consolidation["node_version_id"]
            )
        ).scalar_one()
        if current == "resolved":
            conn.execute(
                insert(t.node_status_transitions).values(
                    node_version_id=consolidation["node_version_id"],
                    from_status="resolved",
                    to_status="open",
                    reason=reason,
                    actor=actor,
                    consolidation_id=consolidation["id"],
                )
            )
    elif outcome == "restored" and memory["status"] != "stable":
        move_memory(conn, memory, "stable", reason, actor, {"proposal_id": str(proposal["id"])})
    events.append(
        conn,
        f"retraction.{outcome}",
        actor=actor,
        thread_id=proposal["thread_id"],
        subject_id=proposal["id"],
        payload={
            "consolidation_id": str(consolidation["id"]),
            **{k: v for k, v in details.items() if k != "groups"},
        },
    )
