"""The council's answer (council/domain/answer.py): which live proposition it established,
and the alternatives, rivals first; each agent's own summary from its kept answer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from council.domain.answer import Candidate, answer_of, summaries, summary_of
from council.domain.results.answer import AnswerGroup

T0 = datetime(2026, 12, 5, tzinfo=UTC)


def group(kind: str, *agents: str) -> AnswerGroup:
    return AnswerGroup(kind=kind, agents=sorted(agents), runs=[uuid4() for _ in agents])


def candidate(
    content: str, *, minutes: int, support: int, disputes: int = 0, consolidated: bool = False
) -> Candidate:
    return Candidate(
        version_id=uuid4(),
        content=content,
        consolidated=consolidated,
        created_at=T0 + timedelta(minutes=minutes),
        support_groups=tuple(group("support", f"s{i}") for i in range(support)),
        dispute_groups=tuple(group("dispute", f"d{i}") for i in range(disputes)),
    )


def test_of_several_consolidated_wordings_the_most_supported_then_the_earliest_is_the_answer() -> None:
    # Given three consolidated propositions stating one answer in other words, and an open one
    early = candidate("Yes, in one wording", minutes=1, support=2, consolidated=True)
    strong = candidate("Yes, in another", minutes=3, support=3, consolidated=True)
    late = candidate("Yes, in a third", minutes=2, support=3, consolidated=True)
    other = candidate("No", minutes=0, support=1, disputes=2)
    # When the answer is chosen
    answer = answer_of([early, strong, late, other])
    # Then the one with the most independent support, then the earliest, is the answer
    assert answer.established and answer.version_id == late.version_id and answer.content == "Yes, in a third"
    assert answer.support == 3 and len(answer.support_groups) == 3
    # And the others are alternatives, by support then age; the same answer in other words
    # says it is consolidated too
    assert [a.version_id for a in answer.alternatives] == [
        strong.version_id,
        early.version_id,
        other.version_id,
    ]
    assert [a.consolidated for a in answer.alternatives] == [True, True, False]
    assert (answer.alternatives[2].support, answer.alternatives[2].disputes) == (1, 2)
    # And the choice does not depend on the order the candidates come in
    assert answer_of([other, late, strong, early]) == answer


def test_with_nothing_consolidated_no_answer_is_established_and_rivals_lead_the_alternatives() -> None:
    # Given two rival propositions (a contradicts edge) and a better-supported third
    yes = candidate("Yes", minutes=1, support=2, disputes=1)
    no = candidate("No", minutes=2, support=1, disputes=2)
    aside = candidate("It depends on the load", minutes=0, support=3)
    answer = answer_of(
        [aside, yes, no], contradicts=[(no.version_id, yes.version_id), (uuid4(), aside.version_id)]
    )
    # Then nothing is established, and every live proposition is an alternative, rivals first
    assert not answer.established and answer.version_id is None and answer.content is None
    assert answer.support == 0 and answer.support_groups == []
    assert [(a.content, a.rival) for a in answer.alternatives] == [
        ("Yes", True),
        ("No", True),
        ("It depends on the load", False),
    ]


def test_an_agents_summary_is_the_summary_of_its_kept_answer_in_its_words() -> None:
    run = UUID(int=7)
    found = summaries(
        [
            ("glm", UUID(int=9), 4, '```json\n{"summary": "I hold   yes,\\n firmly.", "claims": []}\n```'),
            ("claude", run, 4, '{"summary": "My answer is no (0.74)."}'),
            ("codex", UUID(int=8), 4, "not JSON at all"),
        ]
    )
    assert [(s.agent, s.run_id, s.round, s.summary) for s in found] == [
        ("claude", run, 4, "My answer is no (0.74)."),
        ("glm", UUID(int=9), 4, "I hold yes, firmly."),
    ]
    assert summary_of('{"summary": ""}') is None and summary_of("[1, 2]") is None


def test_an_option_set_makes_rivals_without_an_edge_and_the_answers_set_leads() -> None:
    # Given options A, B and C of one question (one set, no contradicts edge), A consolidated,
    # and an unrelated proposition with more support
    a = candidate("A: SQLite", minutes=1, support=2, consolidated=True)
    b = candidate("B: Postgres", minutes=2, support=1, disputes=2)
    c = candidate("C: DuckDB", minutes=3, support=0)
    aside = candidate("It depends on the load", minutes=0, support=3)
    # When the answer is chosen
    answer = answer_of([aside, c, b, a], sets=[[a.version_id, b.version_id, c.version_id]])
    # Then A is established, its set's rivals lead the alternatives, each with its support and disputes
    assert answer.established and answer.version_id == a.version_id and answer.conflict is None
    assert [(x.content, x.rival, x.support, x.disputes) for x in answer.alternatives] == [
        ("B: Postgres", True, 1, 2),
        ("C: DuckDB", True, 0, 0),
        ("It depends on the load", False, 3, 0),
    ]


def test_two_consolidated_rivals_establish_nothing_and_the_answer_says_so() -> None:
    # Given two rivals that both hold a live consolidation (possible only under v1 or v2),
    # and another consolidated proposition in no set with them
    yes = candidate("Yes", minutes=1, support=3, consolidated=True)
    no = candidate("No", minutes=2, support=2, consolidated=True)
    answer = answer_of([no, yes], contradicts=[(no.version_id, yes.version_id)])
    # Then nothing is established: both are listed, rivals and consolidated, and the conflict named
    assert not answer.established and answer.version_id is None and answer.support == 0
    assert [(x.content, x.rival, x.consolidated) for x in answer.alternatives] == [
        ("Yes", True, True),
        ("No", True, True),
    ]
    assert answer.conflict is not None
    assert str(yes.version_id)[:8] in answer.conflict and str(no.version_id)[:8] in answer.conflict
    # And a consolidated proposition with no consolidated rival is still established beside them
    other = candidate("It holds under load", minutes=3, support=1, consolidated=True)
    torn = answer_of([no, yes, other], contradicts=[(no.version_id, yes.version_id)])
    assert torn.established and torn.version_id == other.version_id and torn.conflict is not None
    assert [x.rival for x in torn.alternatives] == [False, False]  # not in the answer's set
