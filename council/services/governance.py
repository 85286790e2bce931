"""What a person governing a thread by hand needs in one read (the live page): why
each open head is or is not consolidated, the evidence and its history, and the
retraction proposals with their votes by group (docs/architecture.md §4, §5, §8)."""

from __future__ import annotations

from council.domain.commands import IdRef
from council.domain.independence import group_runs
from council.domain.results.consolidation import RuleReason
from council.domain.results.governance import Governance, NodeDecision, ProposalShown
from council.domain.rules import evaluate, group_dict
from council.ledger.unit import UnitOfWork


def thread_governance(uow: UnitOfWork, thread: IdRef) -> Governance:
    """Read only: the decisions are evaluated on each head's current snapshot, not recorded."""
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        graph = tx.graph.of_thread(thread_id)
        live = {c.node_version_id for c in graph.consolidations if c.status == "live"}
        decisions = []
        for node in graph.nodes:
            head = next((v for v in node.versions if v.version_id == node.head_version_id), None)
            if head is None or head.claims == 0:
                continue
            decision = evaluate(tx.consolidations.current_snapshot(head.version_id))
            decisions.append(
                NodeDecision(
                    node_version_id=head.version_id,
                    content=head.content,
                    outcome=decision.outcome,
                    consolidated=head.version_id in live,
                    reasons=[RuleReason(**r.as_dict()) for r in decision.reasons],
                )
            )
        evidence = [tx.evidence.show(e) for e in sorted(tx.evidence.ids_of_thread(thread_id), key=str)]
        return Governance(
            thread_id=thread_id,
            review=tx.reviews.settings(thread_id).current,
            decisions=decisions,
            evidence=evidence,
            proposals=[
                ProposalShown.model_validate(
                    {
                        **read.shown,
                        "groups": [group_dict(g) for g in group_runs(read.voters.runs, read.voters.params)],
                    }
                )
                for read in tx.retractions.of_thread(thread_id)
            ],
        )
