"""Retraction proposals, votes and adjudication (DESIGN §5).

A proposal pins the rule set and grouping version in force when it opens.
Votes are claims of agent runs on the proposal (endorse = retract, dispute =
keep, abstain), grouped by independence like any other claims. Adjudication
is serialized under the same node lock as the committer and idempotent.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Engine, func, insert, select

from council.domain import validate as v
from council.domain.independence import GroupingParams, RunFacts, group_runs
from council.domain.rules import group_dict
from council.domain.vocabulary import VOTES
from council.errors import BadInput
from council.ledger import events
from council.ledger import tables as t
from council.ledger.db import unit_of_work
from council.ledger.locks import lock_node
from council.ledger.lookup import require
from council.ledger.memory import move_memory
from council.sql import query


def default_versions(conn: Connection, consolidation: Any) -> tuple[str, str]:
    """The rule set and grouping version in force now: COUNCIL_RULE_SET /
    COUNCIL_GROUPING_ALGORITHM when set, else the thread's pinned ones."""
    thread = require(conn, t.threads, consolidation["thread_id"], "thread")
    rule_set = os.environ.get("COUNCIL_RULE_SET") or thread["rule_set_id"]
    grouping = os.environ.get("COUNCIL_GROUPING_ALGORITHM") or thread["grouping_algorithm_id"]
    for table, key, what in (
        (t.rule_sets, rule_set, "rule set"),
        (t.grouping_algorithms, grouping, "grouping"),
    ):
        if conn.execute(select(table.c.id).where(table.c.id == key)).first() is None:
            raise BadInput(f"no {what} named {key!r}")
    return rule_set, grouping


def open_in(conn: Connection, consolidation: Any, *, reason: str, actor: str) -> UUID:
    """Open (or return the already open) proposal to retract a consolidation."""
    versions = default_versions(conn, consolidation)
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


def propose(engine: Engine, consolidation_id: UUID, *, reason: str, actor: str) -> dict[str, Any]:
    reason = v.text(reason, "reason", v.MAX_REASON)
    with unit_of_work(engine) as conn:
        consolidation = require(conn, t.consolidations, consolidation_id, "consolidation")
        lock_node(conn, consolidation["logical_node_id"])
        consolidation = (
            conn.execute(select(t.consolidations).where(t.consolidations.c.id == consolidation_id))
            .mappings()
            .one()
        )
        if consolidation["status"] != "live":
            raise BadInput(f"consolidation {consolidation_id} is {consolidation['status']}, not live")
        proposal_id = open_in(conn, consolidation, reason=reason, actor=actor)
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
        return dict(require(conn, t.retraction_proposals, proposal_id, "retraction proposal"))


def vote(
    engine: Engine,
    proposal_id: UUID,
    run_id: UUID,
    *,
    choice: str,
    actor: str,
    confidence: float | None = None,
    rationale: str = "",
) -> dict[str, Any]:
    v.choice(choice, "vote", VOTES)
    level = v.confidence(confidence)
    rationale = v.text(rationale, "rationale", v.MAX_RATIONALE, allow_empty=True)
    with unit_of_work(engine) as conn:
        return vote_in(
            conn, proposal_id, run_id, choice=choice, confidence=level, rationale=rationale, actor=actor
        )


def check_vote(conn: Connection, proposal_id: UUID, run: Any) -> Any:
    """The proposal, if ``run`` may vote on it now (same thread, open, not yet
    voted by this run); otherwise BadInput. Writes nothing."""
    proposal = require(conn, t.retraction_proposals, proposal_id, "retraction proposal")
    if run["thread_id"] != proposal["thread_id"]:
        raise BadInput(f"run {run['id']} belongs to another thread than proposal {proposal_id}")
    if proposal["status"] != "open":
        raise BadInput(f"proposal {proposal_id} is {proposal['status']}; votes are closed")
    if conn.execute(
        select(t.retraction_votes.c.id).where(
            t.retraction_votes.c.proposal_id == proposal_id, t.retraction_votes.c.run_id == run["id"]
        )
    ).first():
        raise BadInput(f"run {run['id']} already voted on proposal {proposal_id}")
    return proposal


def vote_in(
    conn: Connection,
    proposal_id: UUID,
    run_id: UUID,
    *,
    choice: str,
    confidence: Any,
    rationale: str,
    actor: str,
) -> dict[str, Any]:
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
    return dict(row)


def proposal_briefing(engine: Engine, proposal_id: UUID) -> dict[str, Any]:
    """What a review run is shown of a proposal: its reason, the consolidated
    node's content and the consolidation's evidence (by its index) with each
    item's current validity. No votes: review is blind."""
    with unit_of_work(engine) as conn:
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


def awaiting_review(engine: Engine, *, limit: int) -> list[dict[str, Any]]:
    """Open proposals no review dispatch was created for yet, oldest first."""
    reviewed = select(t.dispatches.c.id).where(t.dispatches.c.proposal_id == t.retraction_proposals.c.id)
    with unit_of_work(engine) as conn:
        rows = conn.execute(
            select(t.retraction_proposals.c.id, t.retraction_proposals.c.thread_id)
            .where(t.retraction_proposals.c.status == "open", ~reviewed.exists())
            .order_by(t.retraction_proposals.c.created_at, t.retraction_proposals.c.id)
            .limit(limit)
        ).mappings()
        return [dict(r) for r in rows]


def adjudicate(engine: Engine, proposal_id: UUID, *, actor: str) -> dict[str, Any]:
    """Apply the proposal's pinned rules to its independent vote groups."""
    with unit_of_work(engine) as conn:
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
        base = {"proposal_id": proposal_id, "consolidation_id": consolidation["id"]}
        if proposal["status"] != "open":
            return {**base, "outcome": proposal["status"], "already_adjudicated": True}
        found = _vote_groups(conn, proposal)
        retract = [g for g in found if g.kind == "support"]
        keep = [g for g in found if g.kind == "dispute"]
        rules = conn.execute(
            select(t.rule_sets.c.body).where(t.rule_sets.c.id == proposal["rule_set_id"])
        ).scalar_one()
        need = int(rules.get("retraction_min_endorse_groups", 2))
        if consolidation["status"] == "superseded":
            outcome = "superseded"
        elif len(retract) >= need and len(retract) > len(keep):
            outcome = "retracted"
        elif len(keep) >= need and len(keep) > len(retract):
            outcome = "restored"
        else:
            outcome = "pending"
        details = {
            "retract_groups": len(retract),
            "keep_groups": len(keep),
            "required": need,
            "groups": [group_dict(g) for g in found],
            "rule_set_id": proposal["rule_set_id"],
            "grouping_algorithm_id": proposal["grouping_algorithm_id"],
        }
        if outcome != "pending":
            _close(conn, proposal, consolidation, outcome, details, actor)
        return {**base, "outcome": outcome, "already_adjudicated": False, **details}


def _vote_groups(conn: Connection, proposal: Any) -> list[Any]:
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
    return group_runs(facts, GroupingParams.from_record(params))


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
