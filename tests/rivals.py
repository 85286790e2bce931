"""Rival alternatives for tests: a thread under a rule set with exclusive_alternatives and
two nodes joined by a contradicts edge, each endorsed so that it meets the rules on its
own (docs/architecture.md §4). Built through the real services."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import Engine

from council.services.counterfactual import pin_rule_set, store_rule_set
from tests.builders import ACTOR, Ledger

# council-default-v1's rules with exclusive alternatives and no margin: two rivals of equal
# support each pass the margin, so only the live-rival rule (and the set lock behind it)
# keeps the second from consolidating.
EXCLUSIVE_NO_MARGIN = {
    "id": "test-exclusive-v1",
    "description": "v1 with exclusive alternatives, margin 0",
    "body": {
        "min_support_groups": 2,
        "min_support_providers": 2,
        "dispute_confidence_bar": 0.6,
        "exclusive_alternatives": True,
        "min_rival_margin": 0,
    },
}


def exclusive_ledger(
    engine: Engine, document: dict[str, object] | None = None, title: str = "rivals"
) -> Ledger:
    """A new thread pinned to a rule set with exclusive alternatives (stored and pinned here)."""
    chosen = document or EXCLUSIVE_NO_MARGIN
    uow = Ledger.new(engine, title="pin", evidence_items=0).uow
    store_rule_set(uow, chosen, report=None, pin=False, actor=ACTOR)
    pin_rule_set(uow, str(chosen["id"]), actor=ACTOR)
    return Ledger.new(engine, title=title, evidence_items=0)


def endorse_twice(ledger: Ledger, version_id: UUID, *, confidence: float = 0.5, tag: str = "") -> list[UUID]:
    """Two independent endorsements of two providers, each citing evidence of its own."""
    runs = []
    for provider in ("anthropic", "openai"):
        evidence = ledger.add_evidence(f"{tag} {provider} evidence for {version_id}")
        run = ledger.run(provider, agent=f"{provider}-{tag}")
        ledger.claim(run, version_id, confidence=confidence, cites=[evidence])
        runs.append(run)
    return runs


def rivals(ledger: Ledger, *, confidence: float = 0.5) -> tuple[UUID, UUID]:
    """X and Y, Y added with ``--contradicts X``, each endorsed twice (meeting the rules alone)."""
    x = UUID(str(ledger.node("the adapter passes on SQLite")["version_id"]))
    y = UUID(str(ledger.node("the adapter fails on SQLite", edges=[("contradicts", x)])["version_id"]))
    endorse_twice(ledger, x, confidence=confidence, tag="x")
    endorse_twice(ledger, y, confidence=confidence, tag="y")
    return x, y
