"""Who reviews a retraction proposal (docs/architecture.md §5 and §7).

A review is dispatched to the agent profiles that worked the thread — the
profiles of its runs that answered through the workers, outside review — or
to the reviewers its review setting names. Each is resolved where the review
is dispatched, real or simulated as it would run there; then:

1. a name with no profile there is left out;
2. never a simulated voter beside real ones: when any candidate runs real,
   the simulated ones are left out;
3. when none runs real, simulated voters review only a thread whose own runs
   were simulated (no run of it that answered was real), and only where
   simulation is allowed (not ``never``); else each is left out.

Every one left out carries its reason; with nobody left, the proposal stays
for a manual review and the reason is the one stated. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

THREAD, SETTING = "thread", "setting"  # where the candidates came from


@dataclass(frozen=True)
class Candidate:
    """A candidate reviewer as resolved where the review is dispatched; ``known``
    False: no profile of that name there."""

    name: str
    simulated: bool = False
    why: str = ""  # why it runs real or simulated there
    known: bool = True


@dataclass(frozen=True)
class LeftOut:
    agent: str
    reason: str


@dataclass(frozen=True)
class Reviewers:
    agents: tuple[str, ...]
    left_out: tuple[LeftOut, ...]
    source: str  # thread | setting
    simulated: bool  # the chosen voters run simulated (never a mix)
    reason: str = ""  # why nobody reviews (when ``agents`` is empty)

    def document(self) -> dict[str, object]:
        """What the dispatch's or the unstaffed proposal's event records."""
        return {
            "source": self.source,
            "agents": list(self.agents),
            "simulated": self.simulated,
            "left_out": [{"agent": o.agent, "reason": o.reason} for o in self.left_out],
            **({"reason": self.reason} if self.reason else {}),
        }


def choose(
    candidates: Sequence[Candidate], *, source: str, thread_real: bool, simulation_refused: bool = False
) -> Reviewers:
    """The reviewers among ``candidates`` (in their order); ``thread_real``: a run
    of the thread that answered (outside review) was real; ``simulation_refused``:
    the simulation mode where the review is dispatched is ``never``."""
    left: list[LeftOut] = []
    known: list[Candidate] = []
    for c in candidates:
        if c.known:
            known.append(c)
        else:
            left.append(LeftOut(c.name, f"no agent profile named {c.name!r} where the review is dispatched"))
    real = [c for c in known if not c.simulated]
    simulated = [c for c in known if c.simulated]
    if real:
        chosen = real
        left += [
            LeftOut(c.name, f"would run simulated ({c.why}); a simulated voter never votes beside real ones")
            for c in simulated
        ]
    elif simulated and (thread_real or simulation_refused):
        chosen = []
        why = "the thread's own runs were real" if thread_real else "simulation mode is never"
        left += [LeftOut(c.name, f"would run simulated ({c.why}); {why}") for c in simulated]
    else:
        chosen = simulated
    reason = ""
    if not chosen:
        if not candidates:
            reason = "no agent profile worked this thread (no worker run answered on it outside review)"
        else:
            reason = "no profile qualifies: " + "; ".join(f"{o.agent}: {o.reason}" for o in left)
    return Reviewers(
        agents=tuple(c.name for c in chosen),
        left_out=tuple(left),
        source=source,
        simulated=bool(chosen) and chosen[0].simulated,
        reason=reason,
    )
