"""Use cases of retraction: propose, vote, adjudicate (docs/architecture.md §5).

Adjudication is serialized under the consolidated node's lock (the
committer's) and idempotent: a proposal already decided answers with its
decision. Votes are grouped by independence like any other claims.
"""

from __future__ import annotations

from uuid import UUID

from council import config
from council.domain.commands import IdRef
from council.domain.independence import group_runs
from council.domain.results.consolidation import GroupShape
from council.domain.results.retraction import Adjudicated, Proposal, Vote
from council.domain.rules import adjudication, group_dict
from council.ledger.retraction import Pins
from council.services.ports import UnitOfWork


def propose_retraction(uow: UnitOfWork, consolidation: IdRef, *, reason: str, actor: str) -> Proposal:
    """Open a retraction proposal, pinned to the rule set and grouping in force."""
    rule_set, grouping = config.proposal_pins()
    with uow() as tx:
        return tx.retractions.propose(
            tx.resolve("consolidation", consolidation),
            reason=reason,
            actor=actor,
            pins=Pins(rule_set, grouping),
        )


def vote(
    uow: UnitOfWork,
    proposal: IdRef,
    run: IdRef,
    *,
    choice: str,
    actor: str,
    confidence: float | None = None,
    rationale: str = "",
) -> Vote:
    """A run's vote on a proposal: endorse = retract, dispute = keep, abstain."""
    with uow() as tx:
        return tx.retractions.vote(
            tx.resolve("retraction proposal", proposal),
            tx.resolve("run", run),
            choice=choice,
            actor=actor,
            confidence=confidence,
            rationale=rationale,
        )


def adjudicate_if_automatic(uow: UnitOfWork, proposal_id: UUID, *, actor: str) -> Adjudicated | None:
    """Adjudicate a proposal whose review ended — unless its thread reviews by hand
    (``manual``: people's votes and `council retraction adjudicate` decide)."""
    with uow() as tx:
        thread_id = tx.retractions.get(proposal_id).thread_id
        if not tx.reviews.current(thread_id).automatic:
            return None
    return adjudicate(uow, proposal_id, actor=actor)


def adjudicate(
    uow: UnitOfWork, proposal: IdRef, *, actor: str, restore: bool = False, reason: str = ""
) -> Adjudicated:
    """Apply the proposal's pinned rules to its independent vote groups — or, with
    ``restore``, undo the retraction it decided (the explicit restore a retracted
    version needs before it is stable again), recording ``reason``."""
    with uow() as tx:
        proposal_id = tx.resolve("retraction proposal", proposal)
        row, consolidation = tx.retractions.locked_for_adjudication(proposal_id)
        if restore:
            tx.retractions.restore(row, consolidation, reason=reason, actor=actor)
            return Adjudicated(
                proposal_id=proposal_id,
                consolidation_id=consolidation["id"],
                outcome="restored",
                already_adjudicated=False,
                restored_retraction=True,
            )
        if row.status != "open":
            return Adjudicated(
                proposal_id=proposal_id,
                consolidation_id=consolidation["id"],
                outcome=row.status,
                already_adjudicated=True,
            )
        voters = tx.retractions.voters(row)
        found = group_runs(voters.runs, voters.params)
        retract = sum(1 for g in found if g.kind == "support")
        keep = sum(1 for g in found if g.kind == "dispute")
        need = tx.retractions.required_groups(row.rule_set_id)
        outcome = adjudication(
            retract_groups=retract,
            keep_groups=keep,
            required=need,
            superseded=consolidation["status"] == "superseded",
        )
        groups = [group_dict(g) for g in found]
        details = {
            "retract_groups": retract,
            "keep_groups": keep,
            "required": need,
            "groups": groups,
            "rule_set_id": row.rule_set_id,
            "grouping_algorithm_id": row.grouping_algorithm_id,
        }
        rivals: list[UUID] = []
        if outcome != "pending":
            tx.retractions.close(row, consolidation, outcome, details, actor)
            if outcome == "retracted":
                rivals = tx.alternatives.rival_heads([consolidation["node_version_id"]])
        return Adjudicated(
            proposal_id=proposal_id,
            consolidation_id=consolidation["id"],
            outcome=outcome,
            already_adjudicated=False,
            retract_groups=retract,
            keep_groups=keep,
            required=need,
            rivals_due=rivals,
            groups=[GroupShape(**g) for g in groups],
            rule_set_id=row.rule_set_id,
            grouping_algorithm_id=row.grouping_algorithm_id,
        )
