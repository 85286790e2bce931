"""`council watch`'s groups at each claim come from the stored records at that
claim, not from the state when printed (docs/architecture.md §3), against real Postgres."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import Engine

from council.ledger.unit import UnitOfWork
from council.services.consolidation import groups
from council.services.formation import formation
from tests.builders import Ledger


def test_the_groups_at_each_claim_are_those_of_that_moment(engine: Engine, uow: UnitOfWork) -> None:
    # Given two blind endorsements, then a third run shown both stances (a deliberative round)
    ledger = Ledger.new(engine)
    version = UUID(str(ledger.node("WAL is safe")["version_id"]))
    first = ledger.run("anthropic", agent="claude")
    ledger.claim(first, version, confidence=0.8)
    second = ledger.run("openai", agent="codex")
    ledger.claim(second, version, confidence=0.7)
    third = ledger.run("zhipu", agent="glm", exposed_to=[first, second], round_no=2)
    ledger.claim(third, version, "dispute", confidence=0.6)
    # When the formation is read after the fact
    steps = formation(uow, ledger.thread_id).steps
    # Then each claim shows the groups as they were then
    assert [(s.agent, s.stance) for s in steps] == [
        ("claude", "endorse"),
        ("codex", "endorse"),
        ("glm", "dispute"),
    ]
    assert [sorted(g.kind for g in s.groups) for s in steps] == [
        ["support"],
        ["support", "support"],
        ["dispute", "support"],
    ]
    # And the third claim merged the two support groups, by exposure to each
    assert {(link.agent, link.kind) for link in steps[2].links} == {
        ("claude", "exposure"),
        ("codex", "exposure"),
    }
    assert steps[2].run_agents == {str(first): "claude", str(second): "codex", str(third): "glm"}
    # While the groups now are one component, the second step still holds two groups
    now = groups(uow, version)
    assert now.support_groups == 1 and len(steps[1].groups) == 2
    # And reading after an event gives only the later claims
    assert [s.agent for s in formation(uow, ledger.thread_id, after=steps[1].event_id).steps] == ["glm"]
