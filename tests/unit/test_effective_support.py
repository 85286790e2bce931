"""Effective independence and the honest quorum, as pure functions (council/domain/effective.py,
council/domain/quorum.py) and as rules of a decision (council/domain/rules.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from council.domain.counterfactual import parse_body
from council.domain.effective import (
    PairCorrelation,
    ResolvedStance,
    correlation_table,
    errors_by_model,
    group_n_eff,
    kish,
    shrink,
)
from council.domain.independence import Group
from council.domain.quorum import Seat, describe, met, quorum
from council.domain.rules import decide
from council.errors import BadInput

PRIOR = {"same_family": 0.6, "other": 0.1}


def stances(model: str, answers: list[tuple[str, bool]]) -> list[ResolvedStance]:
    """``answers``: per version v0, v1, ... (claim type, truth)."""
    return [ResolvedStance(model, f"v{i}", t, truth) for i, (t, truth) in enumerate(answers)]


def test_an_error_is_support_of_a_false_version_or_dispute_of_a_true_one_and_abstain_is_no_stance() -> None:
    errors = errors_by_model(
        [
            *stances("m", [("endorse", False), ("dispute", True), ("originate", True), ("dispute", False)]),
            ResolvedStance("m", "v9", "abstain", True),
        ]
    )
    assert errors == {"m": {"v0": True, "v1": True, "v2": False, "v3": False}}


def test_models_that_err_together_measure_a_correlation_of_one_and_opposite_ones_minus_one() -> None:
    truth = [True, False, True, False]
    a = stances("a", [("endorse", t) for t in truth])  # errs on v1, v3
    b = stances("b", [("endorse", t) for t in truth])  # the same errors
    c = stances("c", [("dispute", t) for t in truth])  # errs on v0, v2
    table = correlation_table(["a", "b", "c"], {}, a + b + c, PRIOR, min_resolved=4)
    by_pair = {tuple(p["models"]): p for p in table}
    assert by_pair[("a", "b")]["measured"] == 1.0 and by_pair[("a", "b")]["used"] == 1.0
    assert by_pair[("a", "c")]["measured"] == -1.0 and by_pair[("a", "c")]["resolved"] == 4


def test_a_pair_with_too_little_history_is_shrunk_toward_its_family_prior() -> None:
    assert shrink(None, 0, 0.6, 20) == 0.6
    assert shrink(1.0, 5, 0.6, 20) == pytest.approx(0.25 * 1.0 + 0.75 * 0.6)
    assert shrink(-0.2, 20, 0.6, 20) == -0.2
    table = correlation_table(["x", "y", "z"], {"x": "openai", "y": "openai", "z": "zai"}, [], PRIOR, 20)
    used = {tuple(p["models"]): (p["used"], p["same_family"]) for p in table}
    assert used == {("x", "y"): (0.6, True), ("x", "z"): (0.1, False), ("y", "z"): (0.1, False)}


def test_kish_counts_uncorrelated_votes_fully_and_perfectly_correlated_ones_once() -> None:
    assert kish(3, {}) == 3.0
    assert kish(3, {(0, 1): 1.0, (0, 2): 1.0, (1, 2): 1.0}) == 1.0
    assert kish(2, {(0, 1): 0.5}) == pytest.approx(4 / 3, abs=1e-6)
    assert kish(2, {(0, 1): -0.9}) == 2.0  # a negative correlation is taken as 0
    assert kish(0, {}) == 0.0


def test_two_groups_are_as_correlated_as_their_most_correlated_models_and_a_model_with_itself_fully() -> None:
    table = correlation_table(["a", "b", "c"], {"a": "f", "b": "f"}, [], PRIOR, 10)
    assert group_n_eff([["a"], ["c"]], table) == pytest.approx(4 / 2.2, abs=1e-6)
    assert group_n_eff([["a"], ["a"]], table) == 1.0
    assert group_n_eff([["a", "c"], ["b"]], table) == pytest.approx(4 / 3.2, abs=1e-6)


def seat(agent: str, status: str, run: str = "", dispatch: str = "d1") -> Seat:
    return {"dispatch_id": dispatch, "run_id": run or f"r-{agent}-{status}", "agent": agent, "status": status}


def test_the_quorum_counts_agents_and_names_who_did_not_answer() -> None:
    q = quorum([seat("claude", "succeeded"), seat("codex", "succeeded"), seat("glm", "failed")])
    assert (q["agents"], q["answered"], q["share"]) == (3, 2, pytest.approx(2 / 3, abs=1e-6))
    assert q["missing"] == [{"agent": "glm", "status": "failed", "run_id": "r-glm-failed"}]
    assert not met(q, 1.0) and met(q, 0.6)
    assert "glm (failed)" in describe(q, 1.0)


def test_a_re_run_of_the_missing_agent_completes_the_quorum() -> None:
    seats = [seat("claude", "succeeded"), seat("glm", "failed"), seat("glm", "succeeded", dispatch="d2")]
    q = quorum(seats)
    assert q["share"] == 1.0 and q["missing"] == [] and met(q, 1.0)


def test_a_version_no_dispatch_judged_lost_no_member() -> None:
    q = quorum([])
    assert q["share"] is None and met(q, 1.0)


def snapshot(runs: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "node": {"status": "open", "head_version_id": "v", "version_id": "v"},
        "objective_forks": [],
        "evidence": [],
        "citations": [],
        "claims": [],
        "pending_actions": [],
        "branch": {"kind": "main", "status": "active"},
        "runs": runs,
        **extra,
    }


BODY = {"min_support_groups": 2, "min_support_providers": 2, "dispute_confidence_bar": 0.5}


def support(run: str, provider: str) -> Group:
    return Group(f"g-{run}", "support", (run,), (provider,), 0.8, (run,))


RUNS = [
    {"id": "r1", "agent": "claude", "model": "anthropic/a", "provider": "anthropic"},
    {"id": "r2", "agent": "codex", "model": "openai/b", "provider": "openai"},
]


def test_min_effective_support_fails_when_the_supporters_err_together() -> None:
    groups = [support("r1", "anthropic"), support("r2", "openai")]
    correlated = [{"models": ["anthropic/a", "openai/b"], "used": 0.9}]
    body = {**BODY, "min_effective_support": 1.5}
    low = decide(snapshot(RUNS, correlations=correlated), body, groups)
    reason = {r.rule: r for r in low.reasons}["effective_support"]
    assert not low.positive and not reason.ok and reason.detail.startswith("n_eff 1.05 over 2")
    high = decide(snapshot(RUNS, correlations=[{**correlated[0], "used": 0.1}]), body, groups)
    assert high.positive and {r.rule: r for r in high.reasons}["effective_support"].ok


def test_min_council_answered_fails_naming_the_member_that_did_not_answer() -> None:
    groups = [support("r1", "anthropic"), support("r2", "openai")]
    council = [seat("claude", "succeeded"), seat("codex", "succeeded"), seat("glm", "failed")]
    decision = decide(snapshot(RUNS, council=council), {**BODY, "min_council_answered": 1.0}, groups)
    reason = {r.rule: r for r in decision.reasons}["council_answered"]
    assert not decision.positive and "glm (failed)" in reason.detail
    assert decide(snapshot(RUNS, council=council), {**BODY, "min_council_answered": 0.6}, groups).positive


def test_a_rule_set_without_the_new_keys_decides_as_before() -> None:
    groups = [support("r1", "anthropic"), support("r2", "openai")]
    decision = decide(snapshot(RUNS), BODY, groups)
    assert decision.positive
    assert {r.rule for r in decision.reasons}.isdisjoint({"effective_support", "council_answered"})


MODELS = ["m0", "m1", "m2", "m3"]


@st.composite
def supporters(draw: st.DrawFn) -> tuple[list[PairCorrelation], list[list[str]], list[str]]:
    """A correlation table over four models (each pair's value in [0, 1], 1 included), the
    models of some support groups, and a new group perfectly correlated with one of them:
    the same models, or a model the table puts at 1 with one of that group's models."""
    values = st.one_of(st.just(1.0), st.just(0.0), st.floats(0, 1, allow_nan=False))
    table: list[PairCorrelation] = [
        {
            "models": [a, b],
            "same_family": False,
            "resolved": 0,
            "measured": None,
            "prior": 0.0,
            "used": draw(values),
        }
        for i, a in enumerate(MODELS)
        for b in MODELS[i + 1 :]
    ]
    groups = draw(st.lists(st.lists(st.sampled_from(MODELS), min_size=1, max_size=2), min_size=1, max_size=5))
    twin = list(draw(st.sampled_from(groups)))
    if draw(st.booleans()):
        other = [m for m in MODELS if m not in twin]
        ones = [m for m in other if any(p["used"] == 1.0 and set(p["models"]) == {m, twin[0]} for p in table)]
        if ones:
            twin = [draw(st.sampled_from(ones))]
    return table, groups, twin


@given(supporters())
def test_adding_a_supporter_perfectly_correlated_with_an_existing_one_never_raises_n_eff(
    case: tuple[list[PairCorrelation], list[list[str]], list[str]],
) -> None:
    table, groups, twin = case
    assert group_n_eff([*groups, twin], table) <= group_n_eff(groups, table)


V2_BODY = {
    "min_support_groups": 2,
    "min_support_providers": 2,
    "dispute_confidence_bar": 0.6,
    "min_effective_support": 1.5,
    "error_correlation_prior": {"same_family": 0.6, "other": 0.3},
    "correlation_min_resolved": 30,
    "min_council_answered": 0.75,
}


def test_a_rule_set_file_takes_the_new_keys_and_refuses_bad_values() -> None:
    assert parse_body(V2_BODY) == V2_BODY
    for change, reason in (
        ({"min_council_answered": 1.5}, "min_council_answered must be a share from 0 to 1"),
        ({"error_correlation_prior": {"same_family": 0.6}}, "error_correlation_prior must be"),
        ({"correlation_min_resolved": 0}, "correlation_min_resolved must be a whole number"),
        ({"min_effective_support": "two"}, "min_effective_support must be a number"),
    ):
        with pytest.raises(BadInput, match=reason):
            parse_body({**V2_BODY, **change})
    without_prior = {k: v for k, v in V2_BODY.items() if k != "error_correlation_prior"}
    with pytest.raises(BadInput, match="min_effective_support needs error_correlation_prior"):
        parse_body(without_prior)
