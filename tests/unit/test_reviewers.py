"""Who reviews a retraction proposal: the pure rule (council.domain.reviewers) and the
reviewers a thread's setting names (council.domain.review.parse_agents)."""

from __future__ import annotations

import pytest

from council.domain.review import AUTO, DELAYED, MANUAL, Review, parse_agents
from council.domain.reviewers import SETTING, THREAD, Candidate, LeftOut, choose
from council.errors import BadInput

REAL = "its key is set"
UNSET = "ZAI_API_KEY is unset"


def _real(name: str) -> Candidate:
    return Candidate(name, simulated=False, why=REAL)


def _simulated(name: str) -> Candidate:
    return Candidate(name, simulated=True, why=UNSET)


def test_real_profiles_review_and_a_simulated_one_beside_them_is_left_out_with_why() -> None:
    chosen = choose([_real("claude"), _simulated("glm"), _real("codex")], source=THREAD, thread_real=True)
    assert (chosen.agents, chosen.simulated, chosen.reason) == (("claude", "codex"), False, "")
    assert chosen.left_out == (
        LeftOut("glm", f"would run simulated ({UNSET}); a simulated voter never votes beside real ones"),
    )


def test_even_on_a_simulated_thread_a_simulated_profile_never_votes_beside_a_real_one() -> None:
    chosen = choose([_simulated("glm"), _real("claude")], source=THREAD, thread_real=False)
    assert chosen.agents == ("claude",) and [o.agent for o in chosen.left_out] == ["glm"]


def test_simulated_profiles_review_a_thread_whose_own_runs_were_simulated() -> None:
    chosen = choose([_simulated("claude"), _simulated("glm")], source=THREAD, thread_real=False)
    assert (chosen.agents, chosen.simulated, chosen.left_out) == (("claude", "glm"), True, ())


def test_simulated_profiles_never_review_a_real_thread_and_it_says_why_nobody_reviews() -> None:
    chosen = choose([_simulated("glm")], source=SETTING, thread_real=True)
    assert (chosen.agents, chosen.source) == ((), SETTING)
    why = f"glm: would run simulated ({UNSET}); the thread's own runs were real"
    assert chosen.reason == f"no profile qualifies: {why}"


def test_where_simulation_is_refused_simulated_profiles_are_left_out() -> None:
    chosen = choose([_simulated("glm")], source=THREAD, thread_real=False, simulation_refused=True)
    assert chosen.agents == () and chosen.left_out[0].reason.endswith("simulation mode is never")


def test_an_unknown_profile_is_left_out_and_no_candidate_at_all_is_its_own_reason() -> None:
    chosen = choose([Candidate("gone", known=False), _real("codex")], source=SETTING, thread_real=True)
    assert chosen.agents == ("codex",)
    gone = LeftOut("gone", "no agent profile named 'gone' where the review is dispatched")
    assert chosen.left_out == (gone,)
    nobody = choose([], source=THREAD, thread_real=True)
    assert nobody.agents == () and nobody.reason.startswith("no agent profile worked this thread")
    assert nobody.document() == {
        "source": THREAD,
        "agents": [],
        "simulated": False,
        "left_out": [],
        "reason": nobody.reason,
    }


def test_a_setting_names_its_reviewers_once_each_or_the_thread() -> None:
    assert parse_agents(" claude, codex ") == ("claude", "codex")
    assert parse_agents("thread") is None and parse_agents("THREAD") is None
    for bad in ("", "claude,", "claude,,codex", "claude,claude", ",".join(f"a{i}" for i in range(17))):
        with pytest.raises(BadInput):
            parse_agents(bad)


def test_a_setting_describes_who_reviews() -> None:
    assert Review(AUTO).describe() == "automatic review by the profiles that worked the thread"
    delayed = Review(DELAYED, 600, ("claude", "codex"))
    assert delayed.describe() == "automatic review after 10m by claude, codex"
    assert Review(MANUAL, 0, ("claude",)).describe() == "manual review (people vote and adjudicate)"
