"""Groups as they formed, claim by claim (council.domain.formation): pure."""

from __future__ import annotations

from council.domain.formation import formation
from council.domain.independence import GroupingParams, RunFacts, group_runs

PARAMS = GroupingParams(
    link_parent=True, link_exposure=True, input_jaccard=0.8, evidence_jaccard=0.5, evidence_min_shared=2
)


def _run(run_id: str, stance: str = "endorse", **kw: object) -> RunFacts:
    return RunFacts(run_id=run_id, provider=f"p-{run_id}", stance=stance, confidence=0.8, **kw)  # type: ignore[arg-type]


def test_each_step_has_the_groups_of_the_runs_that_had_claimed_by_then() -> None:
    runs = [_run("a"), _run("b"), _run("c", exposed_to=frozenset({"a", "b"}))]
    steps = formation(runs, PARAMS)
    assert [len(s.groups) for s in steps] == [1, 2, 1]
    assert [s.joined for s in steps] == [0, 0, 2]
    assert {(link.b, link.kind) for link in steps[2].links} == {("a", "exposure"), ("b", "exposure")}
    assert steps[-1].groups == tuple(group_runs(runs, PARAMS))


def test_a_run_linked_twice_into_one_earlier_group_joined_one_group() -> None:
    # a and b are one group by shared evidence; c is a's child and was shown b's stance
    shared = frozenset({"e1", "e2"})
    runs = [
        _run("a", cited_evidence=shared),
        _run("b", cited_evidence=shared),
        _run("c", parent_run_id="a", exposed_to=frozenset({"b"})),
    ]
    steps = formation(runs, PARAMS)
    assert [link.kind for link in steps[1].links] == ["shared_evidence"]
    assert steps[2].joined == 1 and steps[2].links[0].kind == "parent"


def test_a_dispute_joins_the_component_but_forms_its_own_group() -> None:
    steps = formation([_run("a"), _run("b", "dispute", exposed_to=frozenset({"a"}))], PARAMS)
    assert [g.kind for g in steps[1].groups] == ["dispute", "support"]
    assert steps[1].groups[0].component_runs == ("a", "b")
    assert steps[1].links[0].kind == "exposure"
