"""The stance-change classifier (council/domain/stances.py), by property."""

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
)


@given(FACTS)
def test_no_exposure_and_no_new_evidence_is_never_conformity(facts: StanceFacts) -> None:
    quiet = StanceFacts(facts.claim_type, facts.prior_claim_type, (), 0, 0)
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
