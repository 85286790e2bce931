"""Exclusive alternatives in the pure evaluation (council/domain/alternatives.py, rules.py,
eval_council.py; docs/architecture.md §4): derived disputes, the rival margin, the live
rival, a v4 snapshot's manifest, the sets links make, and a question's options."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from council.domain import alternatives
from council.domain.alternatives import Member, components, joined_live, one_per_set, parse_options
from council.domain.independence import GroupingParams, RunFacts
from council.domain.observation import Claim, RecordFacts, RuleSetUnderTest, TurnFacts, evaluate_records
from council.domain.rules import evaluate
from council.domain.snapshot import manifest_of, snapshot_hash
from council.errors import BadInput
from tests.unit.test_rules import PARAMS, RULES, _snapshot

EXCLUSIVE = {**RULES, "exclusive_alternatives": True, "min_rival_margin": 0}


def _rival(
    version: str, claims: list[tuple[str, str, str, str]], *, live: str | None = None
) -> dict[str, Any]:
    return {
        "logical_node_id": f"n-{version}",
        "version_id": version,
        "status": "resolved" if live else "open",
        "status_transition_id": None,
        "claims": [
            {"id": f"c-{version}-{r}", "run_id": r, "type": k, "confidence": c} for r, _, k, c in claims
        ],
        "runs": [
            {
                "id": r,
                "agent": p,
                "provider": p,
                "simulated": False,
                "parent_run_id": None,
                "input_features": [],
                "model": f"{p}/m",
            }
            for r, p, _, _ in claims
        ],
        "exposures": [],
        "citations": [],
        "consolidation": None
        if live is None
        else {"id": live, "version_id": version, "status": "live", "transition_id": None},
    }


def _contested(
    own: list[tuple[str, str, str, str]], *rivals: dict[str, Any], rules: dict[str, Any] | None = None
) -> dict[str, Any]:
    snapshot = _snapshot(own)
    snapshot["format"] = "council-snapshot-v4"
    snapshot["rule_set"]["body"] = rules or EXCLUSIVE
    snapshot["rivals"] = list(rivals)
    return snapshot


TWO = [("a1", "anthropic", "endorse", "0.500"), ("o1", "openai", "endorse", "0.500")]
TWO_MORE = [("a2", "anthropic", "endorse", "0.500"), ("o2", "openai", "endorse", "0.500")]


def _failed(snapshot: dict[str, Any]) -> dict[str, str]:
    return {r.rule: r.detail for r in evaluate(snapshot).reasons if not r.ok}


def test_rivals_of_equal_support_both_pass_the_margin_of_zero_and_the_live_one_blocks() -> None:
    assert _failed(_contested(TWO, _rival("y", TWO_MORE))) == {}
    assert set(_failed(_contested(TWO, _rival("y", TWO_MORE, live="k1")))) == {"no_live_rival"}


def test_an_endorsement_of_a_rival_is_a_dispute_grouped_as_one() -> None:
    # A confident endorsement of the rival, by a run that took no stance here, blocks
    confident = _rival("y", [("g1", "zhipu", "endorse", "0.700")])
    failed = _failed(_contested(TWO, confident))
    assert set(failed) == {"no_strong_dispute"}
    assert "1 run(s) endorsing a rival counted as disputing" in failed["no_strong_dispute"]
    # A run that also endorsed this node keeps its own stance
    both = _rival("y", [("a1", "anthropic", "endorse", "0.900")])
    assert _failed(_contested(TWO, both)) == {}
    # And without exclusive_alternatives the rival changes nothing
    assert _failed(_contested(TWO, confident, rules=RULES)) == {}


def test_support_must_exceed_every_rival_by_the_margin() -> None:
    rules = {**EXCLUSIVE, "min_rival_margin": 1}
    three = [*TWO, ("g1", "zhipu", "endorse", "0.500")]
    assert "rival_margin" in _failed(_contested(TWO, _rival("y", TWO_MORE), rules=rules))
    assert _failed(_contested(three, _rival("y", TWO_MORE), rules=rules)) == {}
    # A killed rival is out of the contest: its support is not compared, its endorsers dispute nothing
    killed = {**_rival("y", [*TWO_MORE, ("g2", "zhipu", "endorse", "0.900")]), "status": "killed"}
    assert _failed(_contested(TWO, killed, rules=rules)) == {}


def test_a_v4_snapshot_names_its_rivals_rows_and_hashes_them() -> None:
    snapshot = _contested(TWO, _rival("y", TWO_MORE, live="k1"))
    named = manifest_of(snapshot)
    assert named["rivals"] is not None and '"consolidation":["k1",null]' in named["rivals"]
    changed = copy.deepcopy(snapshot)
    changed["rivals"][0]["claims"][0]["confidence"] = "0.900"
    assert snapshot_hash(changed) != snapshot_hash(snapshot)


def test_one_positive_per_set_in_a_round() -> None:
    a = {"node": {"logical_node_id": "n-a"}, "rivals": [{"logical_node_id": "n-b"}]}
    b = {"node": {"logical_node_id": "n-b"}, "rivals": [{"logical_node_id": "n-a"}]}
    c = {"node": {"logical_node_id": "n-c"}}
    kept, left = one_per_set([("a", a), ("b", b), ("c", c)])
    assert (kept, left) == (["a", "c"], ["b"])


@given(st.lists(st.tuples(st.sampled_from("abcdefg"), st.sampled_from("abcdefgXY")), max_size=12))
def test_components_are_the_connected_sets_of_two_or_more_nodes(links: list[tuple[str, str]]) -> None:
    nodes = set("abcdefg")
    found = components(links, nodes)
    assert all(len(group) > 1 and group <= nodes for group in found)
    assert sum(len(g) for g in found) == len(set().union(*found)) if found else True
    for a, b in links:  # linked nodes share a set
        if a in nodes and b in nodes and a != b:
            assert any(a in g and b in g for g in found)


def test_joined_live_names_two_live_alternatives_an_edge_would_join() -> None:
    sets = {"x": ("s1", frozenset({"x"})), "y": ("s2", frozenset({"y"})), "z": ("s3", frozenset())}
    assert joined_live([("x", "y")], sets) == ["x", "y"]
    assert joined_live([("x", "z")], sets) == []
    assert joined_live([("x", "z"), ("z", "y")], sets) == ["x", "y"]


def test_a_questions_options() -> None:
    assert parse_options(["A=yes", " B = no "]) == (("A", "yes"), ("B", "no"))
    for bad, reason in (
        (["A=yes", "B"], "expected LABEL=TEXT"),
        (["A=yes", "a=no"], "given twice"),
        (["A=yes", "B="], "has no text"),
        (["A=only"], "takes 2 to 100"),
        ([f"{'L' * 101}=x", "B=y"], "1 to 100 characters"),
    ):
        with pytest.raises(BadInput, match=reason):
            parse_options(bad)
    assert alternatives.option_content("A", "yes") == "A: yes"


def test_derived_facts_keep_the_rival_supporters_highest_confidence() -> None:
    node = Member("x", (RunFacts("r1", "anthropic", "endorse", 0.5),))
    rival = Member(
        "y", (RunFacts("r2", "openai", "endorse", 0.4), RunFacts("r1", "anthropic", "endorse", 0.9))
    )
    other = Member("z", (RunFacts("r2", "openai", "originate", 0.8),))
    facts = alternatives.derived_facts(node, [rival, other])
    assert [(f.run_id, f.stance, f.confidence) for f in facts] == [
        ("r1", "endorse", 0.5),
        ("r2", "dispute", 0.8),
    ]
    params = GroupingParams.from_record(PARAMS)
    contest = alternatives.contest(node, [rival, other], params)
    assert contest.derived == ("r2",)


# ------------------------------------------------------------------ eval


def _turn(run: str, provider: str, answer: str) -> TurnFacts:
    return TurnFacts(
        run_id=run, agent=provider, provider=provider, answer=answer, confidence=None, model=provider
    )


def test_eval_contests_a_records_rivals_and_counts_records_with_two() -> None:
    # Three providers answer A, two answer B: both meet v1's rules on their own
    votes = {"p1": "A", "p2": "A", "p3": "A", "p4": "B", "p5": "B"}
    record = RecordFacts(
        "r",
        {"A": True, "B": False},
        tuple(_turn(run, run, answer) for run, answer in votes.items()),
        tuple(Claim(run, answer, "endorse", 0.5) for run, answer in votes.items()),
        {"A": frozenset({"B"}), "B": frozenset({"A"})},
    )
    plain = RuleSetUnderTest("plain", RULES)
    tie_goes_first = RuleSetUnderTest("exclusive", EXCLUSIVE)
    margin = RuleSetUnderTest("margin", {**EXCLUSIVE, "min_rival_margin": 2})
    report = evaluate_records([record], [plain, tie_goes_first, margin], PARAMS)
    council: Any = report["council"]
    assert (council["plain"]["wrong"], council["plain"]["rivals"]) == (1, 1)
    # The stronger is decided first; its rival then sees it live
    assert (council["exclusive"]["correct"], council["exclusive"]["rivals"]) == (1, 0)
    # A margin of two groups is more than A's lead of one
    assert council["margin"]["decided"] == 0


def test_eval_decides_a_node_without_rivals_under_exclusive_rules() -> None:
    # One answer only (a record whose agents all agree, no options): no set, nothing contested
    record = RecordFacts(
        "agreed",
        {"A": True},
        (_turn("p1", "p1", "A"), _turn("p2", "p2", "A")),
        (Claim("p1", "A", "endorse", 0.5), Claim("p2", "A", "endorse", 0.5)),
    )
    report = evaluate_records([record], [RuleSetUnderTest("exclusive", EXCLUSIVE)], PARAMS)
    council: Any = report["council"]
    assert (council["exclusive"]["decided"], council["exclusive"]["correct"]) == (1, 1)
