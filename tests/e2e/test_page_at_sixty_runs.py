"""The live page at 60 runs fits about three screens (issue 45): in headless Chromium at
1440 × 900 against `council serve` and real Postgres, a thread whose node has 60 runs
(tests/e2e/test_independence_page.py's) shows its runs folded by round and agent, every
node's text whole once it is opened, and the council's answer at the top (GET
/threads/{id}/answer, as the decision record leads with it, set as text); the whole page is
at most 2,700 pixels tall. The screenshot is kept in test-artifacts/."""

from __future__ import annotations

from sqlalchemy import Engine

from tests.e2e.test_governance_page import _png_size
from tests.e2e.test_independence_page import TOKEN, _api, _sixty, served  # noqa: F401 (the fixture)
from tests.e2e.test_live_page import ARTIFACTS, CHROMIUM_ARGS, _chromium

WIDTH, HEIGHT, TALLEST = 1440, 900, 2700
# Each run chip: the agent of its row, the round of its column, and its text
PLACED = """() => Object.fromEntries([...document.querySelectorAll("#runs .run-chip")].map((c) => [
  c.dataset.runId, [c.closest("tr").dataset.agent, Number(c.closest("td").dataset.round), c.textContent]]))"""
ORDER = """() => [...document.querySelectorAll("body > section, main > section")].map((s) => s.id)"""
TOP = """(id) => document.getElementById(id).getBoundingClientRect().top + window.scrollY"""


def test_sixty_runs_fit_three_screens_folded_by_round_and_agent(engine: Engine, served: str) -> None:  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    chromium = _chromium()
    # Given a thread whose node has 60 runs of 12 agents over three rounds
    sixty = _sixty(engine)
    content = "WAL mode is safe for concurrent readers"
    agents = list(dict.fromkeys(sixty.agent.values()))
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "page-60-1440.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            # When the page is opened on it in a 1440 × 900 window
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(f"{served}/?thread={sixty.ledger.thread_id}")
            page.fill("#token", TOKEN)
            expect(page.locator("svg.indep-graph")).to_have_attribute("data-runs", "60", timeout=30_000)
            # Then the runs are folded: a row an agent, a column a round, each run a chip in its cell
            expect(page.locator("#runs .run-chip")).to_have_count(60, timeout=30_000)
            expect(page.locator("#runs tr")).to_have_count(len(agents))
            expect(page.locator("#runs-head th")).to_have_text(["agent", "round 1", "round 2", "round 3"])
            placed = page.evaluate(PLACED)
            assert placed == {
                run: [agent, sixty.round[run], f"✓ {run[:8]}"] for run, agent in sixty.agent.items()
            }
            expect(page.locator("#runs-summary")).to_have_text("60/60 finished · 12 agents × 3 round(s)")
            # And a chip, clicked, shows that run's answer
            [first] = [r for r in sixty.agent if (sixty.agent[r], sixty.round[r]) == ("claude", 3)]
            page.locator(f'.run-chip[data-run-id="{first}"]').click()
            expect(page.locator("#run-answer")).to_have_attribute("data-run-id", first)
            expect(page.locator("#run-answer")).to_have_text(sixty.answer[first])
            # And a node's text, cut in the graph's box, is shown whole once the node is opened
            node = page.locator("#graph .node").first
            expect(node.locator("text.content")).to_have_text(content[:29] + "…")
            node.click()
            expect(page.locator("#node-text")).to_contain_text(content + " (v1, open, 60 claims")
            # And the council's answer is at the top, under the thread's head, within the first
            # screen: nothing established, the one live proposition its alternative, with the
            # independent groups that support it, each agent's name set as text
            sections = page.evaluate(ORDER)
            assert sections[:2] == ["thread-head", "answer-panel"], sections
            assert (
                sections.index("answer-panel") < sections.index("graph-panel") < sections.index("runs-panel")
            )
            panel = page.locator("#answer-panel")
            expect(panel).to_be_visible(timeout=30_000)
            expect(panel).to_have_attribute("data-established", "false")
            expect(panel.locator(".answer-none")).to_have_text("No established answer: the live alternatives")
            alternative = panel.locator(f'.answer-alternatives li[data-version-id="{sixty.version}"]')
            [alt] = _api(served, f"/threads/{sixty.ledger.thread_id}/answer")["alternatives"]
            assert alt["version_id"] == str(sixty.version) and alt["support"] > 1
            expect(alternative).to_contain_text(
                f"alternative {content} — support {alt['support']} independent group(s): "
            )
            expect(page.locator("#answer-summary")).to_have_text(
                "nothing established · 1 live alternative(s)"
            )
            assert page.evaluate(TOP, "answer-panel") < page.evaluate(TOP, "graph-panel")
            assert page.evaluate(TOP, "answer-panel") + panel.bounding_box()["height"] <= HEIGHT  # type: ignore[index]
            assert page.evaluate("() => window.__pwned") is None
            assert panel.locator("img").count() == 0
            # And the whole page is at most three screens tall
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    width, height = _png_size(shot)
    assert width == WIDTH and height <= TALLEST, (width, height)
