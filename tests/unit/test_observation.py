"""`council eval`'s figures (council/domain/observation.py) on hand-computed records, and
the properties docs/guide/observe.md states: a record's figures do not depend on the other records'
order, a blind turn is never a conformity flip, and 1 <= n_eff <= supporters."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from council.domain.observation import (
    Claim,
    RecordFacts,
    RuleSetUnderTest,
    TurnFacts,
    calibration,
    evaluate_records,
    majority_answer,
    n_eff,
    pearson,
    stance_cause,
)

GROUPING = {
    "link_parent": True,
    "link_exposure": True,
    "input_jaccard": 0.5,
    "evidence_jaccard": 0.5,
    "evidence_min_shared": 2,
}
DEFAULT = RuleSetUnderTest(
    "council-default-v1",
    {"min_support_groups": 2, "min_support_providers": 2, "dispute_confidence_bar": 0.6},
)
LAX = RuleSetUnderTest(
    "lax", {"min_support_groups": 1, "min_support_providers": 1, "dispute_confidence_bar": 1.0}
)
PROVIDER = {"a": "openai", "b": "anthropic", "c": "zhipu"}


def turn(run: str, agent: str, answer: str | None, *, saw: tuple[str, ...] = (), conf: float | None = None,
         cited: frozenset[str] = frozenset()) -> TurnFacts:  # fmt: skip
    return TurnFacts(run, agent, PROVIDER[agent], answer, conf, saw, cited=cited)


def record(rid: str, truth: str, turns: list[TurnFacts]) -> RecordFacts:
    """Each turn's parent is its agent's previous turn, as an import records it."""
    last: dict[str, str] = {}
    linked = []
    for t in turns:
        linked.append(t._replace(parent_run_id=last.get(t.agent)))
        last[t.agent] = t.run_id
    turns = linked
    claims = tuple(Claim(t.run_id, t.answer, "endorse", t.confidence or 0.5) for t in turns if t.answer)
    nodes = {t.answer for t in turns if t.answer} | {truth}
    return RecordFacts(rid, {n: n == truth for n in nodes}, tuple(turns), claims)


# Record 1: three agents, two rounds. Round 1 (blind): a=X, b=Y, c=Y. Round 2 (saw the
# others' round 1): a flips X -> Y (toward: Y seen twice, X never), b keeps Y, c keeps Y.
# Truth X. So: a first correct, last wrong (correct_to_wrong, toward_exposure).
R1 = record(
    "r1",
    "X",
    [
        turn("1a", "a", "X", conf=0.9),
        turn("1b", "b", "Y", conf=0.6),
        turn("1c", "c", "Y", conf=0.7),
        turn("2a", "a", "Y", saw=("1b", "1c"), conf=0.8),
        turn("2b", "b", "Y", saw=("1a", "1c"), conf=0.7),
        turn("2c", "c", "Y", saw=("1a", "1b"), conf=0.75),
    ],
)
# Record 2: a=X, b=Y, c=None in round 1 (a tie X/Y: X was given first); round 2 b flips
# Y -> X after seeing a's X (toward), c answers X. Truth X.
R2 = record(
    "r2",
    "X",
    [
        turn("3a", "a", "X"),
        turn("3b", "b", "Y"),
        turn("3c", "c", None),
        turn("4a", "a", "X", saw=("3b", "3c")),
        turn("4b", "b", "X", saw=("3a", "3c")),
        turn("4c", "c", "X", saw=("3a", "3b")),
    ],
)
# Record 3: unresolved: counted in records, nowhere else.
R3 = RecordFacts("r3", {}, (turn("5a", "a", "X"),), (Claim("5a", "X", "endorse", 0.5),))


def test_accuracy_majority_flips_on_hand_computed_records() -> None:
    report = evaluate_records([R1, R2, R3], [DEFAULT, LAX], GROUPING)
    assert (report["records"], report["resolved"]) == (3, 2)
    a, b, c = (report["agents"][n] for n in "abc")
    # a: first X (correct) twice; last: Y (wrong) in r1, X in r2
    assert (a["first_accuracy"], a["last_accuracy"]) == (1.0, 0.5)
    # b: first Y, Y (wrong, wrong); last Y (r1 wrong), X (r2 correct)
    assert (b["first_accuracy"], b["last_accuracy"]) == (0.0, 0.5)
    # c: first Y (wrong), None (not correct); last Y, X
    assert (c["first_accuracy"], c["last_accuracy"]) == (0.0, 0.5)
    # Flips: a correct->wrong toward exposure (r1); b wrong->correct toward exposure (r2);
    # c's None -> X is no flip (a null answer is not an answer)
    assert (
        a["flips"]["correct_to_wrong"] == 1
        and a["flips"]["by_cause"]["toward_exposure"]["correct_to_wrong"] == 1
    )
    assert (
        b["flips"]["wrong_to_correct"] == 1
        and b["flips"]["by_cause"]["toward_exposure"]["wrong_to_correct"] == 1
    )
    assert sum(c["flips"][k] for k in ("correct_to_wrong", "wrong_to_correct", "wrong_to_wrong")) == 0
    # Majority, first round: r1 Y (wrong); r2 X/Y tie -> X (given first): correct, one tie
    assert report["majority"]["first_round"] == {"accuracy": 0.5, "ties": 1, "correct": 1}
    # Last round: r1 Y (wrong); r2 X (correct)
    assert report["majority"]["last_round"] == {"accuracy": 0.5, "ties": 0, "correct": 1}
    # Oracle gap: both records had a correct turn; the last-round majority missed r1
    assert report["oracle_gap"]["oracle_correct"] == 2 and report["oracle_gap"]["majority"] == 1


def test_the_council_decides_only_on_independent_support() -> None:
    report = evaluate_records([R1, R2], [DEFAULT, LAX], GROUPING)
    # Deliberation links every round-2 run to the round-1 runs it saw, and to its own agent's
    # round-1 run (its parent): each record's supporters of a node form one component.
    default = report["council"]["council-default-v1"]
    assert default["decided"] == 0 and default["coverage"] == 0.0 and default["accuracy"] is None
    # One group from one provider is enough under `lax`: every answered node consolidates
    # (r1: X and Y; r2: X and Y), so neither record is decided correctly
    lax = report["council"]["lax"]
    assert (lax["decided"], lax["correct"], lax["wrong"], lax["accuracy"]) == (2, 0, 2, 0.0)
    assert report["oracle_gap"]["council"] == {"council-default-v1": 0, "lax": 2}


def test_blind_independent_support_from_two_providers_consolidates() -> None:
    # Two blind runs of different providers endorse X, one disputes it weakly
    blind = RecordFacts(
        "blind",
        {"X": True},
        (turn("x1", "a", "X"), turn("x2", "b", "X")),
        (Claim("x1", "X", "endorse", 0.8), Claim("x2", "X", "endorse", 0.7)),
    )
    report = evaluate_records([blind], [DEFAULT], GROUPING)
    assert report["council"]["council-default-v1"] == {
        "decided": 1, "coverage": 1.0, "accuracy": 1.0, "correct": 1, "wrong": 0, "unjudged": 0, "rivals": 0,
    }  # fmt: skip
    [node] = report["effective_votes"]["nodes"]
    assert node["supporters"] == ["a", "b"]
    # One record: no correlation can be measured, so n_eff counts them as independent
    assert node["n_eff"] == 2.0


@pytest.mark.parametrize(
    ("rho", "expected"),
    [(0.0, 3.0), (1.0, 1.0), (0.5, 1.5), (-0.4, 3.0), (None, 3.0)],
)
def test_n_eff_for_uncorrelated_fully_correlated_and_mixed_supporters(
    rho: float | None, expected: float
) -> None:
    pairs = {pair: rho for pair in itertools.combinations("abc", 2)}
    assert n_eff(["a", "b", "c"], pairs) == expected


def test_n_eff_mixed_pairs() -> None:
    # a and b fully correlated, c independent of both: 9 / (3 + 2*1) = 1.8
    assert n_eff(["a", "b", "c"], {("a", "b"): 1.0, ("a", "c"): 0.0, ("b", "c"): 0.0}) == 1.8


def test_error_correlation_is_phi_and_null_without_variance() -> None:
    assert pearson([1, 0, 1, 0], [1, 0, 1, 0]) == 1.0
    assert pearson([1, 0, 1, 0], [0, 1, 0, 1]) == -1.0
    assert pearson([1, 1, 1], [1, 0, 1]) is None
    assert pearson([1], [1]) is None


def test_majority_ties_go_to_the_answer_given_first() -> None:
    turns = [turn("1", "a", "Y"), turn("2", "b", "X"), turn("3", "c", None)]
    assert majority_answer(turns) == ("Y", True)
    assert majority_answer([turn("1", "a", None)]) == (None, False)


def test_stance_cause_classes() -> None:
    before = turn("1", "a", "X")
    # Evidence first, whatever was seen
    cited = turn("2", "a", "Y", cited=frozenset({"e1"}))
    assert stance_cause(before, cited, ["Y", "Y"]) == "after_evidence"
    after = turn("2", "a", "Y")
    assert stance_cause(before, after, ["Y"]) == "toward_exposure"
    assert stance_cause(before, after, ["X", "X", "Y"]) == "against_exposure"
    assert stance_cause(before, after, ["X", "Y"]) == "no_recorded_cause"
    assert stance_cause(before, after, []) == "no_recorded_cause"
    # Its control (the blind re-run) answered the same: self-revision, whatever was seen
    revised = after._replace(control_answer="Y")
    assert stance_cause(before, revised, ["Y"]) == "self_revision"
    assert stance_cause(before, revised, []) == "self_revision"
    # A control that held (or moved elsewhere) leaves the class to what was seen
    assert stance_cause(before, after._replace(control_answer="X"), ["Y"]) == "toward_exposure"
    assert stance_cause(before, after._replace(control_answer="Z"), []) == "no_recorded_cause"
    # Evidence still outranks it
    assert stance_cause(before, cited._replace(control_answer="Y"), []) == "after_evidence"


def test_calibration_brier_and_ece_with_bins() -> None:
    # Confidences 0.9 (right), 0.9 (wrong), 0.25 (wrong), 1.0 (right)
    report = calibration([(0.9, True), (0.9, False), (0.25, False), (1.0, True)])
    assert report is not None
    # Brier: (0.01 + 0.81 + 0.0625 + 0) / 4
    assert report["brier"] == pytest.approx(0.220625)
    # Bins: [0.2, 0.3): conf 0.25, acc 0 -> |0 - 0.25| * 1/4; [0.9, 1.0]: confs 0.9, 0.9, 1.0,
    # acc 2/3 -> |2/3 - 0.9333| * 3/4
    assert report["ece"] == pytest.approx(0.25 / 4 + abs(2 / 3 - 2.8 / 3) * 3 / 4, abs=1e-6)
    assert [b["count"] for b in report["bins"]] == [0, 0, 1, 0, 0, 0, 0, 0, 0, 3]
    assert calibration([]) is None


def test_cost_counts_the_decided_records_runs() -> None:
    paid = RecordFacts(
        "paid",
        {"X": True},
        (
            TurnFacts("p1", "a", "openai", "X", None, prompt_tokens=100, completion_tokens=10, usd=0.01),
            TurnFacts("p2", "b", "anthropic", "X", None, prompt_tokens=200, completion_tokens=20, usd=0.03),
        ),
        (Claim("p1", "X", "endorse", 0.8), Claim("p2", "X", "endorse", 0.8)),
    )
    cost = evaluate_records([paid], [DEFAULT], GROUPING)["cost"]
    assert cost == {
        "decided_records": 1, "runs_with_usage": 2,
        "prompt_tokens": 300, "completion_tokens": 30, "usd": 0.04,
        "per_decided_record": {"prompt_tokens": 300.0, "completion_tokens": 30.0, "usd": 0.04},
    }  # fmt: skip


def test_the_report_is_deterministic() -> None:
    one = evaluate_records([R1, R2, R3], [DEFAULT, LAX], GROUPING)
    two = evaluate_records([R1, R2, R3], [DEFAULT, LAX], GROUPING)
    assert one == two and len(one["report_sha256"]) == 64


# ------------------------------------------------------------------ properties

ANSWERS = st.sampled_from(["X", "Y", "Z", None])


@st.composite
def records(draw: st.DrawFn, rid: str) -> RecordFacts:
    rounds = draw(st.integers(1, 3))
    turns: list[TurnFacts] = []
    previous: list[str] = []
    for r in range(rounds):
        now = []
        for agent in "abc":
            run = f"{rid}-{r}{agent}"
            saw = tuple(previous) if draw(st.booleans()) else ()
            turns.append(turn(run, agent, draw(ANSWERS), saw=saw, conf=draw(st.none() | st.floats(0, 1))))
            now.append(run)
        previous = now
    return record(rid, draw(st.sampled_from(["X", "Y", "Z"])), turns)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=2, max_size=5, unique=True), st.data())
def test_a_records_figures_do_not_depend_on_the_order_of_other_records(
    ids: list[int], data: st.DataObject
) -> None:
    recs = [data.draw(records(str(i))) for i in ids]
    forward = evaluate_records(recs, [LAX], GROUPING)
    backward = evaluate_records(list(reversed(recs)), [LAX], GROUPING)
    forward.pop("report_sha256")
    backward.pop("report_sha256")
    forward["effective_votes"]["nodes"].sort(key=lambda n: (n["record"], n["node_version_id"]))
    backward["effective_votes"]["nodes"].sort(key=lambda n: (n["record"], n["node_version_id"]))
    assert forward == backward


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["X", "Y"]), st.sampled_from(["X", "Y", "Z"]))
def test_a_blind_turn_is_never_a_conformity_flip(before: str, after: str) -> None:
    cause = stance_cause(turn("1", "a", before), turn("2", "a", after), [])
    assert cause not in ("toward_exposure", "against_exposure")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=6, unique=True), st.data())
def test_n_eff_lies_between_one_and_the_number_of_supporters(agents: list[str], data: st.DataObject) -> None:
    pairs = {
        pair: data.draw(st.none() | st.floats(-1, 1)) for pair in itertools.combinations(sorted(agents), 2)
    }
    value = n_eff(agents, pairs)
    assert 1 - 1e-9 <= value <= len(agents) + 1e-9


V2 = RuleSetUnderTest(
    "council-default-v2",
    {
        "min_support_groups": 2,
        "min_support_providers": 2,
        "dispute_confidence_bar": 0.6,
        "min_effective_support": 1.5,
        "error_correlation_prior": {"same_family": 0.6, "other": 0.3},
        "correlation_min_resolved": 30,
        "min_council_answered": 0.75,
    },
)


def blind_pair(n: int, a_wrong: object, b_wrong: object) -> list[RecordFacts]:
    """``n`` one-round records of agents a and b (two providers), each answering record i's
    node Wi (wrong) or Ri (right) blind, as ``a_wrong(i)`` / ``b_wrong(i)`` say."""
    return [
        record(f"p{i}", f"R{i}", [turn(f"{i}a", "a", f"W{i}" if a_wrong(i) else f"R{i}"),  # type: ignore[operator]
                                  turn(f"{i}b", "b", f"W{i}" if b_wrong(i) else f"R{i}")])  # type: ignore[operator]
        for i in range(n)
    ]  # fmt: skip


def test_v2_refuses_agreement_of_agents_that_err_together_and_keeps_that_of_independent_ones() -> None:
    # Given 40 records where a and b are wrong together on every other one
    together = blind_pair(40, lambda i: i % 2 == 0, lambda i: i % 2 == 0)
    report = evaluate_records(together, [DEFAULT, V2], GROUPING)
    council = report["council"]
    assert isinstance(council, dict)
    # Then v1 decides every record on their two blind votes (half of them wrong), and v2,
    # measuring their errors' correlation at 1 on the 39 other records (n_eff 1), none
    assert (council["council-default-v1"]["decided"], council["council-default-v1"]["wrong"]) == (40, 20)
    assert council["council-default-v2"]["decided"] == 0
    # Given instead agents whose errors are uncorrelated (phi 0 over each cycle of four)
    apart = blind_pair(40, lambda i: i % 2 == 0, lambda i: i % 4 in (0, 1))
    council = evaluate_records(apart, [DEFAULT, V2], GROUPING)["council"]
    assert isinstance(council, dict)
    # Then both decide the same records: those where the two agree
    assert council["council-default-v1"] == council["council-default-v2"]
    assert council["council-default-v1"]["decided"] == 20
