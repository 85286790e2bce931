"""The output check as pure domain code (council/domain/output_check.py): an output
against what the ledger read for it, no database. The same outputs against real
Postgres are in tests/integration/test_apply_output.py."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import pytest

from council.domain.agent_output import AgentOutput
from council.domain.output_check import (
    BranchFacts,
    ClaimTarget,
    Known,
    OutputRun,
    VersionFacts,
    check,
    references,
)
from council.domain.votes import ProposalFacts, check_vote
from council.errors import BadInput, NotFound

THREAD, OTHER = uuid4(), uuid4()
MAIN, CLOSED = uuid4(), uuid4()
V1, V2, FOREIGN = uuid4(), uuid4(), uuid4()
NODE = uuid4()
EVIDENCE = uuid4()
RUN = OutputRun(uuid4(), THREAD)


def _known(**changes: Any) -> Known:
    """A thread with an active main branch, a closed branch, two claimable versions on main,
    one version of another thread, a logical node and one attached evidence item."""
    base: dict[str, Any] = {
        "main_branch_id": MAIN,
        "proposals": {},
        "claimed_versions": {
            V1: ClaimTarget(THREAD, None, None),
            V2: ClaimTarget(THREAD, None, None),
            FOREIGN: ClaimTarget(OTHER, None, None),
        },
        "branches": {MAIN: BranchFacts(THREAD, "active"), CLOSED: BranchFacts(THREAD, "abandoned")},
        "logical_nodes": {NODE: THREAD},
        "versions": {
            V1: VersionFacts(THREAD, MAIN),
            V2: VersionFacts(THREAD, CLOSED),
            FOREIGN: VersionFacts(OTHER, uuid4()),
        },
        "attached_evidence": frozenset({EVIDENCE}),
    }
    return Known(**{**base, **changes})


def _refused(output: dict[str, Any], known: Known | None = None, run: OutputRun = RUN) -> BadInput:
    with pytest.raises(BadInput) as refused:
        check(AgentOutput.model_validate(output), run, known or _known())
    return refused.value


def _cite(evidence_id: UUID = EVIDENCE) -> dict[str, Any]:
    return {"evidence_id": str(evidence_id), "role": "supports"}


def test_a_valid_output_passes_and_names_the_rows_it_needs() -> None:
    output = AgentOutput.model_validate(
        {
            "claims": [
                {"node_version_id": str(V1), "type": "endorse", "confidence": 0.7, "cites": [_cite()]}
            ],
            "new_nodes": [
                {"ref": "a", "content": "a", "edges": [{"kind": "refines", "to": str(V1)}]},
                {"ref": "b", "content": "b", "edges": [{"kind": "refines", "to": "ref:a"}]},
            ],
            "new_versions": [{"logical_node_id": str(NODE), "content": "again"}],
            "forks": [{"kind": "node", "label": "f", "divergence_type": "claim", "at_version_id": str(V1)}],
            "pending_actions": [
                {"description": "d", "acceptance_condition": "c", "node_version_id": str(V1)}
            ],
        }
    )
    check(output, RUN, _known())
    needed = references(output)
    assert needed.claimed_versions == (V1,)
    assert needed.versions == (V1,)  # edge target, fork point and action, once
    assert needed.fork_points == (V1,)
    assert needed.logical_nodes == (NODE,)
    assert needed.evidence == (EVIDENCE,)
    assert needed.needs_main_branch  # the new nodes name no branch


def test_malformed_ids_are_not_read_and_are_refused_in_their_turn() -> None:
    output = {"claims": [{"node_version_id": "node-42", "type": "endorse", "confidence": 0.5}]}
    assert references(AgentOutput.model_validate(output)).claimed_versions == ()
    assert (
        str(_refused(output))
        == "claims[0].node_version_id: malformed node version id: 'node-42' (expected a UUID)"
    )


def test_an_unknown_claimed_version_is_not_found_and_a_foreign_one_belongs_elsewhere() -> None:
    missing = uuid4()
    unknown = _refused({"claims": [{"node_version_id": str(missing), "type": "endorse", "confidence": 0.5}]})
    assert isinstance(unknown, NotFound)
    assert str(unknown) == f"claims: no node version with id {missing}"
    foreign = _refused({"claims": [{"node_version_id": str(FOREIGN), "type": "endorse", "confidence": 0.5}]})
    assert str(foreign) == f"claims: node version {FOREIGN} belongs to another thread"


def test_a_run_claims_neither_on_its_own_version_nor_twice() -> None:
    claim = {"claims": [{"node_version_id": str(V1), "type": "endorse", "confidence": 0.5}]}
    own = _known(claimed_versions={V1: ClaimTarget(THREAD, RUN.id, None)})
    assert "was created by this run; it cannot claim on it" in str(_refused(claim, own))
    again = _known(claimed_versions={V1: ClaimTarget(THREAD, None, "dispute")})
    assert (
        str(_refused(claim, again)) == f"claims[0]: this run already claimed (dispute) on node version {V1}"
    )


def test_checks_run_in_the_order_of_the_output_parts() -> None:
    """A bad claim and a bad new node: the claim is named (claims come first)."""
    reason = _refused(
        {
            "claims": [{"node_version_id": str(uuid4()), "type": "endorse", "confidence": 0.5}],
            "new_nodes": [{"ref": "a", "content": "a", "branch_id": str(CLOSED)}],
        }
    )
    assert str(reason).startswith("claims: no node version with id")


def test_new_nodes_go_on_an_active_branch_of_the_thread() -> None:
    reason = _refused({"new_nodes": [{"ref": "a", "content": "a", "branch_id": str(CLOSED)}]})
    assert str(reason) == (
        f"new_nodes[0].branch_id: branch {CLOSED} is abandoned; new nodes go on an active branch"
    )


def test_edges_name_known_refs_and_versions_of_the_thread() -> None:
    cycle = _refused(
        {
            "new_nodes": [
                {"ref": "a", "content": "a", "edges": [{"kind": "refines", "to": "ref:b"}]},
                {"ref": "b", "content": "b", "edges": [{"kind": "refines", "to": "ref:a"}]},
            ]
        }
    )
    assert str(cycle) == "new_nodes: edges between new nodes form a cycle (among a, b)"
    unknown_ref = _refused(
        {
            "new_versions": [
                {"logical_node_id": str(NODE), "content": "c", "edges": [{"kind": "refines", "to": "ref:x"}]}
            ]
        }
    )
    assert str(unknown_ref) == "new_versions[0].edges[0].to: no new node in this output has ref 'x'"
    foreign = _refused(
        {"new_nodes": [{"ref": "a", "content": "a", "edges": [{"kind": "refines", "to": str(FOREIGN)}]}]}
    )
    assert str(foreign) == f"new_nodes[0].edges: node version {FOREIGN} belongs to another thread"


def test_one_new_version_per_logical_node_of_the_thread() -> None:
    twice = _refused(
        {
            "new_versions": [
                {"logical_node_id": str(NODE), "content": "one"},
                {"logical_node_id": str(NODE), "content": "two"},
            ]
        }
    )
    assert (
        str(twice)
        == f"new_versions[1].logical_node_id: a second new version of logical node {NODE} (one per output)"
    )
    missing = uuid4()
    unknown = _refused({"new_versions": [{"logical_node_id": str(missing), "content": "c"}]})
    assert str(unknown) == f"new_versions[0].logical_node_id: no logical node with id {missing}"


def test_a_fork_leaves_an_active_branch() -> None:
    assert str(_refused({"forks": [{"kind": "node", "label": "f", "divergence_type": "claim"}]})) == (
        "forks[0]: a node fork needs at_version_id, the version it diverges at"
    )
    closed = _refused(
        {"forks": [{"kind": "node", "label": "f", "divergence_type": "claim", "at_version_id": str(V2)}]}
    )
    assert str(closed) == f"forks[0]: branch {CLOSED} is abandoned; fork from an active branch"
    assert str(
        _refused({"forks": [{"kind": "objective", "label": "f", "divergence_type": "objective"}]})
    ) == ("forks[0]: an objective fork needs an objective")


def test_citations_name_evidence_attached_to_the_thread() -> None:
    missing = uuid4()
    reason = _refused(
        {
            "claims": [
                {"node_version_id": str(V1), "type": "endorse", "confidence": 0.5, "cites": [_cite(missing)]}
            ]
        }
    )
    assert isinstance(reason, NotFound)
    assert str(reason) == f"claims[0].cites: no evidence {missing} in this thread"
    new_evidence = {"new_evidence": {"title": "t", "content": "read here"}, "role": "supports"}
    output = {
        "claims": [
            {"node_version_id": str(V1), "type": "endorse", "confidence": 0.5, "cites": [new_evidence]}
        ]
    }
    check(AgentOutput.model_validate(output), RUN, _known())  # new evidence joins the thread when written
    assert references(AgentOutput.model_validate(output)).evidence == ()


def test_nul_is_refused_where_it_stands() -> None:
    reason = _refused({"new_nodes": [{"ref": "a", "content": "a\x00b"}]})
    assert str(reason) == "new_nodes[0].content: contains a NUL character"


def test_a_run_votes_only_on_the_open_proposal_it_reviews_once() -> None:
    proposal = uuid4()
    vote = {"votes": [{"proposal_id": str(proposal), "vote": "endorse"}]}
    reviewer = OutputRun(RUN.id, THREAD, "review", proposal)
    check(
        AgentOutput.model_validate(vote),
        reviewer,
        _known(proposals={proposal: ProposalFacts(THREAD, "open", False)}),
    )
    unknown = _refused(vote, run=reviewer)
    assert str(unknown) == f"votes[0].proposal_id: no retraction proposal with id {proposal}"
    closed = _known(proposals={proposal: ProposalFacts(THREAD, "retracted", False)})
    assert str(_refused(vote, closed, reviewer)) == (
        f"votes[0].proposal_id: proposal {proposal} is retracted; votes are closed"
    )
    not_dispatched = _refused(vote, _known(proposals={proposal: ProposalFacts(THREAD, "open", False)}))
    assert "this run was not dispatched to review proposal" in str(not_dispatched)


def test_check_vote_refuses_another_thread_and_a_second_vote() -> None:
    run_id, proposal = uuid4(), uuid4()
    with pytest.raises(BadInput, match="belongs to another thread than proposal"):
        check_vote(run_id, THREAD, proposal, ProposalFacts(OTHER, "open", False))
    with pytest.raises(BadInput, match=f"run {run_id} already voted on proposal {proposal}"):
        check_vote(run_id, THREAD, proposal, ProposalFacts(THREAD, "open", True))
    check_vote(run_id, THREAD, proposal, ProposalFacts(THREAD, "open", False))


def test_a_cross_review_judges_every_proposition_it_did_not_make_and_is_told_which_it_left() -> None:
    # Given a council's cross-review run that must judge V1 and V2 (what its round showed, less
    # its own lineage's proposition)
    known = _known(must_judge=(V1, V2))
    # When it judges only V2, it is refused with the one it left unjudged, for the re-prompt
    reason = str(_refused({"claims": [{"node_version_id": str(V2), "type": "endorse"}]}, known))
    assert reason.startswith("claims: a cross-review judges every proposition it did not originate")
    assert str(V1) in reason and str(V2) not in reason
    # Then an abstain is a judgement too: a claim of any kind on each passes
    check(
        AgentOutput.model_validate(
            {
                "claims": [
                    {"node_version_id": str(V2), "type": "dispute"},
                    {"node_version_id": str(V1).upper(), "type": "abstain"},
                ]
            }
        ),
        RUN,
        known,
    )
    # And a run outside a cross-review is asked for nothing of the kind
    check(AgentOutput.model_validate({"claims": []}), RUN, _known())
