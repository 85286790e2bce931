"""The rounds of a dispatch (docs/architecture.md §7): what each round asks of its runs,
what it shows them, and when the committer decides.

A ``council`` dispatch (``council ask``, ``dispatch --mode council``) runs the council
protocol:

1. *propose*, blind: each agent words its own proposition(s) on the question (and may
   judge the heads already there);
2. *cross-review*, blind: every proposition of the thread is shown as a proposition — no
   author, no stance, so it is no exposure (§3) — and each agent must judge (endorse,
   dispute or abstain) every one its own lineage did not originate;
3. and on, *deliberate*: the previous round's stances are shown and recorded as exposures.

``--rounds N`` counts a council's deliberative rounds, so it has 2 + N rounds. The committer
decides after the cross-review (the close of round 2 decides its versions before round 3
opens; the close of round 1 decides nothing: every proposition is judged in round 2) and
after the last round. An ``independent`` dispatch's rounds are all blind; a ``deliberative``
one's rounds 2+ are shown the round before; a ``review`` votes on its proposal.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Literal

from council.errors import BadInput

Phase = Literal["blind", "propose", "cross_review", "deliberate", "review"]

# Rounds of a council dispatch before its deliberative ones: propose, cross-review.
BLIND_COUNCIL_ROUNDS = 2
MAX_ROUNDS = 20  # of any dispatch (the dispatches table's check)
# The modes whose later rounds are shown stances, and so may pair their runs with controls.
CONTROLLED_MODES = ("deliberative", "council")
CONTROLS_REFUSED = (
    "--controls needs --mode deliberative or council: only a deliberative round is shown stances"
)
# At most this many propositions a cross-review run must judge: the output contract takes
# at most 50 claims (council.domain.agent_output), in the order the briefing shows them.
MAX_JUDGED = 50


def total_rounds(mode: str, rounds: int) -> int:
    """The rounds a dispatch runs when asked for ``rounds``: a council's are its deliberative
    rounds, after its two blind ones; any other mode's are all of them."""
    return rounds + BLIND_COUNCIL_ROUNDS if mode == "council" else rounds


def check_rounds(mode: str, rounds: int) -> int:
    """The dispatch's rounds in all for ``--rounds`` (BadInput when out of bounds)."""
    if mode == "council":
        most = MAX_ROUNDS - BLIND_COUNCIL_ROUNDS
        if not 0 <= rounds <= most:
            raise BadInput(
                f"--rounds counts a council's deliberative rounds, after its proposing and "
                f"cross-review rounds: between 0 and {most}, got {rounds}"
            )
    elif not 1 <= rounds <= MAX_ROUNDS:
        raise BadInput(f"rounds must be between 1 and {MAX_ROUNDS}, got {rounds}")
    return total_rounds(mode, rounds)


def phase(mode: str, round_no: int) -> Phase:
    """What round ``round_no`` of a dispatch of ``mode`` asks of its runs."""
    if mode == "review":
        return "review"
    if mode == "council":
        return "propose" if round_no <= 1 else "cross_review" if round_no == 2 else "deliberate"
    if mode == "deliberative" and round_no > 1:
        return "deliberate"
    return "blind"


def shows_stances(mode: str, round_no: int) -> bool:
    """Whether round ``round_no`` is shown the previous round's stances (recorded as exposures)."""
    return phase(mode, round_no) == "deliberate"


def stance_rounds(mode: str, total: int) -> int:
    """How many of a dispatch's ``total`` rounds are shown stances (each of their runs gets a
    control run under ``--controls``)."""
    return sum(1 for r in range(1, total + 1) if shows_stances(mode, r))


def decides_at_close(mode: str, round_no: int) -> bool:
    """Whether the close of round ``round_no`` (not the last) has its versions decided before
    the next round opens. A council's proposing round decides nothing: its propositions are
    each judged in the cross-review, whose close decides them."""
    return not (mode == "council" and round_no <= 1)


def judges_every_proposition(mode: str, round_no: int, *, control: bool = False) -> bool:
    """Whether a run of this round must judge every proposition it was shown that its own
    lineage did not originate (the council's cross-review)."""
    return phase(mode, round_no) == "cross_review" and not control


def to_judge(shown: Sequence[str], own: Collection[str]) -> list[str]:
    """The propositions a cross-review run must judge: those its briefing showed (in order)
    that its own lineage did not originate, at most :data:`MAX_JUDGED`."""
    mine = {v.lower() for v in own}
    return [v for v in shown if v.lower() not in mine][:MAX_JUDGED]


def unjudged_reason(missing: Sequence[str]) -> str:
    """The output check's one-line reason, naming the versions a cross-review left unjudged."""
    return (
        f"a cross-review judges every proposition it did not originate: {len(missing)} not judged "
        f"({', '.join(missing)}); add a claim (endorse, dispute or abstain) on each"
    )
