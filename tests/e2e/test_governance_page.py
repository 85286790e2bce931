"""The live page's governance panels in headless Chromium (issue 18 §4): the
independence graph of a node version merges its groups when a deliberative
claim arrives (live, without a reload), each rule's ✓/✗ says why a node is not
consolidated, a proposal shows its votes by independent group and then its
adjudication, and the evidence panel its validity history. Screenshots are
taken and looked at (their size and the page state they were taken in)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.services.consolidation import consolidate
from council.services.observation import resolve
from council.services.retraction import adjudicate, propose_retraction, vote
from council.services.reversal import change_validity
from council.services.threads import set_review
from tests.builders import ACTOR, Ledger
from tests.e2e.conftest import serving
from tests.e2e.test_live_page import ARTIFACTS, CHROMIUM_ARGS, _chromium

TOKEN = "governance-page-token"


@pytest.fixture
def served(worker_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    with serving({**worker_env, "COUNCIL_API_TOKEN": TOKEN}, tmp_path / "serve.log") as started:
        yield str(started["url"])


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


def test_the_page_shows_groups_merging_reasons_votes_and_adjudication(
    engine: Engine, served: str, tmp_path: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    chromium = _chromium()
    # Given a manual thread: one node with two blind endorsements (two groups), and a
    # consolidated node under a retraction proposal with two independent votes to retract
    ledger = Ledger.new(engine)
    set_review(ledger.uow, ledger.thread_id, "manual", actor=ACTOR)
    open_node = UUID(str(ledger.node("WAL mode is safe for concurrent readers")["version_id"]))
    first = ledger.run("anthropic", agent="claude")
    ledger.claim(first, open_node, confidence=0.8, cites=[ledger.evidence[2]])
    second = ledger.run("openai", agent="codex")
    ledger.claim(second, open_node, confidence=0.7)
    consolidation = consolidate(ledger.uow, ledger.ready_node(), actor=ACTOR).consolidation_id
    assert consolidation is not None
    proposal = propose_retraction(ledger.uow, consolidation, reason="the benchmark was rerun", actor=ACTOR).id
    for provider in ("anthropic", "zhipu"):
        vote(ledger.uow, proposal, ledger.run(provider), choice="endorse", actor=ACTOR, confidence=0.9)
    change_validity(
        ledger.uow, None, ledger.evidence[2], action="challenge", reason="method doubted", actor="alice"
    )
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2400})
            page.goto(f"{served}?thread={ledger.thread_id}")
            page.fill("#token", TOKEN)
            expect(page.locator("#stream-state")).to_have_attribute("data-state", "open", timeout=20_000)
            page.evaluate("window.__sameDocument = true")
            # Then past events are shown on open
            expect(page.locator('#events li[data-past="true"][data-kind="thread.created"]')).to_have_count(1)
            # And the open node's graph has two runs in two groups, not linked
            graph = page.locator(f'.formation[data-version-id="{open_node}"] svg.indep-graph')
            expect(graph).to_have_attribute("data-components", "2", timeout=20_000)
            expect(graph.locator(".run-vertex")).to_have_count(2)
            expect(graph.locator(".link")).to_have_count(0)
            # And why it is not consolidated: each rule with its mark
            decision = page.locator(f'.decision[data-version-id="{open_node}"]')
            expect(decision.locator('.reason[data-rule="node_is_open_head"][data-ok="true"]')).to_have_count(
                1
            )
            expect(
                decision.locator('.reason[data-rule="support_evidence_sound"][data-ok="false"]')
            ).to_have_count(1)
            expect(decision.locator('.reason[data-rule="version_not_retracted"]')).to_contain_text("✓")
            # And the proposal shows its votes by group, not yet adjudicated, under manual review
            card = page.locator(f'.proposal[data-proposal-id="{proposal}"]')
            expect(card).to_have_attribute("data-status", "open")
            expect(card.locator('.vote-group[data-side="retract"]')).to_have_count(2)
            expect(card.locator(".adjudication")).to_contain_text("not adjudicated yet (2 vote(s))")
            expect(page.locator("#review-setting")).to_contain_text("manual review")
            # And the evidence panel shows the challenge with its history
            challenged = page.locator(f'.evidence[data-evidence-id="{ledger.evidence[2]}"]')
            expect(challenged).to_have_attribute("data-validity", "challenged")
            expect(challenged).to_contain_text("valid → challenged by alice: method doubted")
            # And, with no resolution yet, the ground-truth panel says how to record one
            expect(page.locator("#truth")).to_contain_text("no resolution recorded")
            before = tmp_path / "before.png"
            page.screenshot(path=str(before), full_page=True)

            # When a deliberative round's run, shown both stances, claims on the node
            third = ledger.run("zhipu", agent="glm", exposed_to=[first, second], round_no=2)
            ledger.claim(third, open_node, confidence=0.6)
            # Then, live, the groups merge in the graph, by two exposure links
            expect(graph).to_have_attribute("data-components", "1", timeout=20_000)
            expect(graph.locator('.link[data-kind="exposure"]')).to_have_count(2)
            expect(graph.locator('.run-vertex[data-component="0"]')).to_have_count(3)
            expect(
                page.locator(f'.formation[data-version-id="{open_node}"] li[data-joined="2"]')
            ).to_contain_text("was shown the stance of")
            # And a person's adjudication appears on the proposal
            adjudicate(ledger.uow, proposal, actor="alice")
            expect(card).to_have_attribute("data-status", "retracted", timeout=20_000)
            expect(card.locator('.adjudication li[data-to="retracted"]')).to_contain_text("by alice")
            # And once the open node is resolved true, live, the panel scores each agent on it
            resolve(ledger.uow, open_node, outcome="true", source="rerun", reason="measured", actor="alice")
            claude = page.locator('#truth tr[data-agent="claude"] td[data-figure="first"]')
            expect(claude).to_have_text("100%", timeout=20_000)
            expect(page.locator("#truth-summary")).to_have_text("1 resolved")
            assert page.evaluate("window.__sameDocument") is True
            after = ARTIFACTS / "governance-page.png"
            page.screenshot(path=str(after), full_page=True)
            graph.screenshot(path=str(ARTIFACTS / "independence-graph.png"))
        finally:
            browser.close()
    # And the screenshots are real renderings of a full page and of the graph
    width, height = _png_size(after)
    assert width == 1400 and height >= 1000
    assert _png_size(ARTIFACTS / "independence-graph.png")[0] >= 300
    assert after.read_bytes() != before.read_bytes()
