"""Independence grouping indep-v1 (docs/architecture.md §3): who counts as an independent voice."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import replace

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from council.domain.independence import Group, GroupingParams, RunFacts, group_runs
from council.domain.vocabulary import CLAIM_TYPES

# indep-v1 as stored by migration 0001, spelled out so the test is an independent oracle.
INDEP_V1 = GroupingParams(
    link_parent=True,
    link_exposure=True,
    input_jaccard=0.8,
    evidence_jaccard=0.5,
    evidence_min_shared=2,
)


def claim(
    run_id: str,
    stance: str = "endorse",
    *,
    provider: str = "anthropic",
    confidence: float = 0.7,
    parent_run_id: str | None = None,
    exposed_to: Iterable[str] = (),
    input_features: Iterable[str] = (),
    cited_evidence: Iterable[str] = (),
) -> RunFacts:
    return RunFacts(
        run_id=run_id,
        provider=provider,
        stance=stance,
        confidence=confidence,
        parent_run_id=parent_run_id,
        exposed_to=frozenset(exposed_to),
        input_features=frozenset(input_features),
        cited_evidence=frozenset(cited_evidence),
    )


def memberships(groups: Sequence[Group]) -> list[tuple[str, tuple[str, ...]]]:
    return [(group.kind, group.runs) for group in groups]


def components(groups: Sequence[Group]) -> set[tuple[str, ...]]:
    return {group.component_runs for group in groups}


# ------------------------------------------------------------------ exposure


def test_a_run_exposed_to_another_claim_joins_its_group() -> None:
    # Given b was shown a's stance in a deliberative round
    runs = [claim("a"), claim("b", exposed_to={"a"}), claim("c")]
    # When grouped
    groups = group_runs(runs, INDEP_V1)
    # Then a and b are one voice, c another
    assert memberships(groups) == [("support", ("a", "b")), ("support", ("c",))]


def test_exposure_to_a_run_that_did_not_claim_joins_nothing() -> None:
    # Given a and b were both shown the stance of x, which did not claim on this node
    runs = [claim("a", exposed_to={"x"}), claim("b", exposed_to={"x"})]
    # When grouped
    groups = group_runs(runs, INDEP_V1)
    # Then they stay two groups: each is linked to x, and x is no vertex
    assert memberships(groups) == [("support", ("a",)), ("support", ("b",))]


# ------------------------------------------------------------------- parents


def test_a_shared_parent_joins_even_when_the_parent_did_not_claim() -> None:
    # Given two sub-runs of one orchestrating run that itself did not claim
    runs = [claim("a", parent_run_id="p"), claim("b", parent_run_id="p"), claim("c", parent_run_id="q")]
    # When grouped
    groups = group_runs(runs, INDEP_V1)
    # Then the siblings are one group and the other family another
    assert memberships(groups) == [("support", ("a", "b")), ("support", ("c",))]


def test_parent_and_child_join() -> None:
    # Given a child run endorsing what its parent originated
    runs = [claim("p", "originate"), claim("child", parent_run_id="p"), claim("other")]
    # When grouped
    groups = group_runs(runs, INDEP_V1)
    # Then parent and child are one group
    assert memberships(groups) == [("support", ("child", "p")), ("support", ("other",))]


def test_links_switched_off_by_params_do_not_join() -> None:
    # Given a family and an exposure, under params that ignore both
    runs = [claim("p"), claim("a", parent_run_id="p"), claim("b", exposed_to={"a"})]
    params = replace(INDEP_V1, link_parent=False, link_exposure=False)
    # When grouped
    groups = group_runs(runs, params)
    # Then every run is its own group
    assert memberships(groups) == [("support", ("a",)), ("support", ("b",)), ("support", ("p",))]


# ------------------------------------------------------------------ evidence


def test_overlapping_cited_evidence_joins() -> None:
    # Given two runs citing {e1, e2, e3} and {e1, e2}: 2 shared, Jaccard 2/3
    runs = [claim("a", cited_evidence={"e1", "e2", "e3"}), claim("b", cited_evidence={"e1", "e2"})]
    # When grouped
    groups = group_runs(runs, INDEP_V1)
    # Then they are one group
    assert memberships(groups) == [("support", ("a", "b"))]


@pytest.mark.parametrize(
    ("first", "second", "why"),
    [
        ({"e1", "e2"}, {"e1", "e3"}, "one shared item, below min_shared 2"),
        ({"e1"}, {"e1"}, "identical, but a single item is below min_shared 2"),
        ({"e1", "e2", "e3", "e4"}, {"e1", "e2", "e5", "e6"}, "two shared, but Jaccard 2/6 < 0.5"),
    ],
)
def test_evidence_overlap_below_the_thresholds_does_not_join(
    first: set[str], second: set[str], why: str
) -> None:
    # Given two runs whose citations overlap too little
    runs = [claim("a", cited_evidence=first), claim("b", cited_evidence=second)]
    # When grouped
    groups = group_runs(runs, INDEP_V1)
    # Then they stay two groups
    assert memberships(groups) == [("support", ("a",)), ("support", ("b",))], why


def test_two_blind_reviewers_of_one_briefing_stay_two_groups() -> None:
    # Given two runs that saw only the shared briefing (no run-specific input) and cited
    # disjoint evidence
    runs = [
        claim("a", input_features=set(), cited_evidence={"e1", "e2"}),
        claim("b", input_features=set(), cited_evidence={"e3", "e4"}),
    ]
    # When grouped
    groups = group_runs(runs, INDEP_V1)
    # Then the common briefing alone does not make them one voice
    assert memberships(groups) == [("support", ("a",)), ("support", ("b",))]


# --------------------------------------------------------------------- input


@pytest.mark.parametrize(
    ("first", "second", "joined"),
    [
        ({"doc-1", "doc-2", "doc-3", "doc-4"}, {"doc-1", "doc-2", "doc-3", "doc-4", "doc-5"}, True),
        ({"doc-1", "doc-2", "doc-3"}, {"doc-1", "doc-2", "doc-3", "doc-4", "doc-5"}, False),
    ],
    ids=["jaccard-0.8-joins", "jaccard-0.6-stays-apart"],
)
def test_similar_run_specific_input_joins(first: set[str], second: set[str], joined: bool) -> None:
    # Given two runs given extra material beyond the briefing
    runs = [claim("a", input_features=first), claim("b", input_features=second)]
    # When grouped
    groups = group_runs(runs, INDEP_V1)
    # Then they are one voice exactly when that material is similar enough (input_jaccard 0.8)
    expected = [("support", ("a", "b"))] if joined else [("support", ("a",)), ("support", ("b",))]
    assert memberships(groups) == expected


# ------------------------------------------------------------------- stances


def test_a_component_splits_into_one_support_and_one_dispute_group() -> None:
    # Given an endorser, a disputer shown its stance and an abstainer shown the dispute
    runs = [
        claim("d", "dispute", exposed_to={"e"}, confidence=0.9),
        claim("e", "endorse", confidence=0.4),
        claim("n", "abstain", exposed_to={"d"}),
    ]
    # When grouped
    groups = group_runs(runs, INDEP_V1)
    # Then one support and one dispute group share the component; the abstainer forms no group
    assert memberships(groups) == [("dispute", ("d",)), ("support", ("e",))]
    assert [group.component_runs for group in groups] == [("d", "e", "n")] * 2
    assert [group.max_confidence for group in groups] == [0.9, 0.4]


def test_group_ids_are_stable_and_derived_from_kind_and_members() -> None:
    # Given two runs of one group, given in either order
    runs = [claim("run-b", exposed_to={"run-a"}), claim("run-a", "originate")]
    # When grouped
    (group,) = group_runs(runs, INDEP_V1)
    # Then the id is a hash of the kind and the sorted members, whatever the input order
    expected = "g-" + hashlib.sha256(b"support:run-a,run-b").hexdigest()[:16]
    assert group.id == expected == group_runs(runs[::-1], INDEP_V1)[0].id
    assert group.id == "g-c1d547f1aa3f7be2"


def test_providers_are_carried_sorted_and_distinct() -> None:
    # Given one group of runs from two providers, two of them from the same provider
    runs = [
        claim("a", provider="openai"),
        claim("b", provider="anthropic", exposed_to={"a"}),
        claim("c", provider="openai", exposed_to={"b"}),
    ]
    # When grouped
    (group,) = group_runs(runs, INDEP_V1)
    # Then the group lists each provider once
    assert group.providers == ("anthropic", "openai")


def test_a_run_given_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="more than once"):
        group_runs([claim("a"), claim("a", "dispute")], INDEP_V1)


def test_an_unknown_stance_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown stance"):
        group_runs([claim("a", "maybe")], INDEP_V1)


# ---------------------------------------------------------------- properties

RUN_IDS = [f"r{number}" for number in range(10)]
REFERENCES = st.sampled_from([*RUN_IDS, "outsider-1", "outsider-2"])  # outsiders never claim
ITEMS = st.sampled_from("abcdefgh")


@st.composite
def run_lists(draw: st.DrawFn) -> list[RunFacts]:
    run_ids = draw(st.lists(st.sampled_from(RUN_IDS), unique=True, max_size=len(RUN_IDS)))
    return [
        RunFacts(
            run_id=run_id,
            provider=draw(st.sampled_from(["anthropic", "openai", "google"])),
            stance=draw(st.sampled_from(CLAIM_TYPES)),
            confidence=draw(st.sampled_from([0.2, 0.5, 0.9])),
            parent_run_id=draw(st.none() | REFERENCES),
            exposed_to=draw(st.frozensets(REFERENCES, max_size=2)),
            input_features=draw(st.frozensets(ITEMS, max_size=4)),
            cited_evidence=draw(st.frozensets(ITEMS, max_size=6)),
        )
        for run_id in run_ids
    ]


grouping_params = st.builds(
    GroupingParams,
    link_parent=st.booleans(),
    link_exposure=st.booleans(),
    input_jaccard=st.sampled_from([0.0, 0.2, 0.5, 0.6, 0.8, 1.0, 1.5]),
    evidence_jaccard=st.sampled_from([0.0, 0.2, 1 / 3, 0.5, 0.7, 1.0]),
    evidence_min_shared=st.integers(min_value=0, max_value=4),
)


@given(run_lists(), grouping_params, st.data())
def test_grouping_is_invariant_under_input_order(
    runs: list[RunFacts], params: GroupingParams, data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(runs))
    assert group_runs(shuffled, params) == group_runs(runs, params)


@given(run_lists(), st.data())
def test_group_ids_never_depend_on_order(runs: list[RunFacts], data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(runs))
    ids = {group.id for group in group_runs(runs, INDEP_V1)}
    assert ids == {group.id for group in group_runs(shuffled, INDEP_V1)}
    for group in group_runs(shuffled, INDEP_V1):
        digest = hashlib.sha256(f"{group.kind}:{','.join(group.runs)}".encode()).hexdigest()
        assert group.id == "g-" + digest[:16]


@given(run_lists(), st.data())
def test_adding_an_exposure_never_increases_the_number_of_components(
    runs: list[RunFacts], data: st.DataObject
) -> None:
    if not runs:
        return
    exposed = data.draw(st.integers(min_value=0, max_value=len(runs) - 1))
    shown = data.draw(st.sampled_from(runs)).run_id
    more = list(runs)
    more[exposed] = replace(runs[exposed], exposed_to=runs[exposed].exposed_to | {shown})
    # An edge may merge a support and a dispute component: count components, not groups.
    assert len(components(group_runs(more, INDEP_V1))) <= len(components(group_runs(runs, INDEP_V1)))


def _naive_groups(runs: Sequence[RunFacts], params: GroupingParams) -> list[tuple[str, tuple[str, ...]]]:
    """All pairs, straight from docs/architecture.md §3: the reference the indexed join must match."""

    def similar(a: frozenset[str], b: frozenset[str], threshold: float, min_shared: int) -> bool:
        shared = len(a & b)
        return bool(a and b) and shared >= min_shared and shared / len(a | b) >= threshold

    graph = nx.Graph()
    graph.add_nodes_from(run.run_id for run in runs)
    for a in runs:
        for b in runs:
            if a.run_id >= b.run_id:
                continue
            family = (
                a.parent_run_id == b.run_id
                or b.parent_run_id == a.run_id
                or (a.parent_run_id is not None and a.parent_run_id == b.parent_run_id)
            )
            exposed = a.run_id in b.exposed_to or b.run_id in a.exposed_to
            if (
                (params.link_parent and family)
                or (params.link_exposure and exposed)
                or similar(a.input_features, b.input_features, params.input_jaccard, 0)
                or similar(
                    a.cited_evidence, b.cited_evidence, params.evidence_jaccard, params.evidence_min_shared
                )
            ):
                graph.add_edge(a.run_id, b.run_id)
    stance = {run.run_id: run.stance for run in runs}
    expected = []
    for component in nx.connected_components(graph):
        for kind, stances in (("support", {"originate", "endorse"}), ("dispute", {"dispute"})):
            members = tuple(sorted(run_id for run_id in component if stance[run_id] in stances))
            if members:
                expected.append((kind, members))
    return sorted(expected)


@given(run_lists(), grouping_params)
def test_grouping_matches_a_naive_all_pairs_reference(runs: list[RunFacts], params: GroupingParams) -> None:
    assert memberships(group_runs(runs, params)) == _naive_groups(runs, params)


@settings(max_examples=300)
@given(
    st.lists(st.frozensets(st.sampled_from("abcdefghij"), min_size=1, max_size=8), max_size=12),
    st.sampled_from([0.2, 0.25, 1 / 3, 0.4, 0.5, 0.6, 2 / 3, 0.75, 0.8, 0.9]),
    st.integers(min_value=0, max_value=3),
)
def test_the_evidence_join_matches_a_naive_all_pairs_reference(
    citations: list[frozenset[str]], threshold: float, min_shared: int
) -> None:
    runs = [claim(f"r{number:02}", cited_evidence=cited) for number, cited in enumerate(citations)]
    params = GroupingParams(
        link_parent=False,
        link_exposure=False,
        input_jaccard=2.0,
        evidence_jaccard=threshold,
        evidence_min_shared=min_shared,
    )
    assert memberships(group_runs(runs, params)) == _naive_groups(runs, params)
