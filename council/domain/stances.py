"""Stance changes (docs/architecture.md §12): did a run move because of new
evidence, because it saw the others, or for no recorded reason?

The same classification as the view ``council_v_stance_changes`` (migration
0012, replaced by 0036), stated in Python so it can be read and property-tested; a
test keeps the two in agreement. Positions: endorse and originate +1, abstain 0,
dispute -1. The subjects are the council's claims: a control run's own claims are
not classified (a control run, ``dispatch --controls``, re-runs a deliberative run's
profile on the blind briefing; it is nobody's prior stance either). The first class
that applies:

- ``first_stance``: no earlier claim of the same agent profile on the node
  version (the run was only shown others' stances): nothing to change from;
- ``held``: the same position as that earlier claim;
- ``after_evidence``: it cites evidence the earlier claim did not, or evidence
  either of them cites was challenged or invalidated between the two — a
  recorded cause, even when the run was also shown others' stances;
- ``self_revision``: its control run (the same profile, round and node version, shown
  no stance) took the same new position: the run would have changed so without seeing
  anyone, so the change is not evidence of conformity. After ``after_evidence`` (a
  recorded cause outranks it), before the exposure classes (which it explains away);
  without a control run it never applies, so a dispatch without controls classifies
  as before;
- ``toward_exposure``: closer to the mean position of the stances it was shown
  (conformity);
- ``against_exposure``: farther from it;
- ``no_recorded_cause``: it changed, and nothing recorded explains it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

POSITIONS = {"originate": 1, "endorse": 1, "abstain": 0, "dispute": -1}
CLASSES = (
    "first_stance",
    "held",
    "after_evidence",
    "self_revision",
    "toward_exposure",
    "against_exposure",
    "no_recorded_cause",
)


@dataclass(frozen=True)
class StanceFacts:
    """What the ledger records about one claim and the stance before it."""

    claim_type: str
    prior_claim_type: str | None
    exposed_types: tuple[str, ...]  # the claims on the node version it was shown
    new_evidence: int
    invalidated_evidence: int
    control_claim_type: str | None = None  # its control run's claim on the version (None: no control)


def classify(facts: StanceFacts) -> str:
    if facts.prior_claim_type is None:
        return "first_stance"
    before, after = POSITIONS[facts.prior_claim_type], POSITIONS[facts.claim_type]
    if before == after:
        return "held"
    if facts.new_evidence > 0 or facts.invalidated_evidence > 0:
        return "after_evidence"
    if facts.control_claim_type is not None and POSITIONS[facts.control_claim_type] == after:
        return "self_revision"
    if facts.exposed_types:
        mean = Fraction(sum(POSITIONS[t] for t in facts.exposed_types), len(facts.exposed_types))
        if abs(after - mean) < abs(before - mean):
            return "toward_exposure"
        if abs(after - mean) > abs(before - mean):
            return "against_exposure"
    return "no_recorded_cause"
