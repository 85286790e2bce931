"""The stance-change classifier (council/domain/stances.py), by property and by hand."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from council.domain.stances import CLASSES, POSITIONS, StanceFacts, classify

TYPES = st.sampled_from(sorted(POSITIONS))
FACTS = st.builds(
    StanceFacts,
    claim_type=TYPES,
    prior_claim_type=st.none() | TYPES,
    exposed_types=st.lists(TYPES, max_size=6).map(tuple),
    new_evidence=st.integers(0, 3),
    invalidated_evidence=st.integers(0, 3),
    control_claim_type=st.none() | TYPES,
)


@given(FACTS)
def test_no_exposure_and_no_new_evidence_is_never_conformity(facts: StanceFacts) -> None:
    quiet = StanceFacts(facts.claim_type, facts.prior_claim_type, (), 0, 0, facts.control_claim_type)
    assert classify(quiet) not in ("toward_exposure", "against_exposure", "after_evidence")


@given(FACTS)
def test_every_change_gets_one_known_class_and_a_kept_position_is_held(facts: StanceFacts) -> None:
    found = classify(facts)
    assert found in CLASSES
    if (
        facts.prior_claim_type is not None
        and POSITIONS[facts.prior_claim_type] == POSITIONS[facts.claim_type]
    ):
        assert found == "held"


@given(FACTS)
def test_moving_to_the_unanimous_exposed_stance_without_new_evidence_is_toward(facts: StanceFacts) -> None:
    if facts.prior_claim_type is None or POSITIONS[facts.prior_claim_type] == POSITIONS[facts.claim_type]:
        return
    unanimous = StanceFacts(facts.claim_type, facts.prior_claim_type, (facts.claim_type,) * 3, 0, 0)
    assert classify(unanimous) == "toward_exposure"


@given(FACTS)
def test_without_a_control_no_change_is_self_revision_and_the_rest_is_as_before(facts: StanceFacts) -> None:
    # A dispatch without --controls records no control claim: its classes are the six of before
    uncontrolled = StanceFacts(
        facts.claim_type, facts.prior_claim_type, facts.exposed_types, facts.new_evidence,
        facts.invalidated_evidence,
    )  # fmt: skip
    assert classify(uncontrolled) != "self_revision"


@given(FACTS)
def test_a_change_its_control_made_alike_is_self_revision_unless_evidence_explains_it(
    facts: StanceFacts,
) -> None:
    if facts.prior_claim_type is None or POSITIONS[facts.prior_claim_type] == POSITIONS[facts.claim_type]:
        return
    alike = StanceFacts(
        facts.claim_type, facts.prior_claim_type, facts.exposed_types, facts.new_evidence,
        facts.invalidated_evidence, control_claim_type=facts.claim_type,
    )  # fmt: skip
    evidence = facts.new_evidence > 0 or facts.invalidated_evidence > 0
    assert classify(alike) == ("after_evidence" if evidence else "self_revision")


@given(FACTS)
def test_a_control_that_held_or_moved_elsewhere_leaves_the_class_to_exposure(facts: StanceFacts) -> None:
    if facts.control_claim_type is None or POSITIONS[facts.control_claim_type] == POSITIONS[facts.claim_type]:
        return
    without = StanceFacts(
        facts.claim_type, facts.prior_claim_type, facts.exposed_types, facts.new_evidence,
        facts.invalidated_evidence,
    )  # fmt: skip
    assert classify(facts) == classify(without)


def test_self_revision_by_hand() -> None:
    # endorsed, then shown three disputes, disputes; its blind control disputes too
    assert classify(StanceFacts("dispute", "endorse", ("dispute",) * 3, 0, 0, "dispute")) == "self_revision"
    # the same, but its control held: the move is conformity
    assert classify(StanceFacts("dispute", "endorse", ("dispute",) * 3, 0, 0, "endorse")) == "toward_exposure"
    # its control abstained (changed, another way): conformity still
    assert classify(StanceFacts("dispute", "endorse", ("dispute",) * 3, 0, 0, "abstain")) == "toward_exposure"
    # shown nothing, it and its control both changed: self-revision, not "no recorded cause"
    assert classify(StanceFacts("abstain", "endorse", (), 0, 0, "abstain")) == "self_revision"
    # an originate and an endorse are the same position: alike
    assert classify(StanceFacts("originate", "dispute", (), 0, 0, "endorse")) == "self_revision"
    # new evidence outranks it (a recorded cause)
    assert classify(StanceFacts("dispute", "endorse", (), 1, 0, "dispute")) == "after_evidence"
    # held stays held whatever the control did
    assert classify(StanceFacts("endorse", "endorse", (), 0, 0, "dispute")) == "held"
    # no prior stance: nothing to revise
    assert classify(StanceFacts("endorse", None, ("endorse",), 0, 0, "endorse")) == "first_stance"
