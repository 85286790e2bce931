"""The page shows a run's kept answer (issue 29 part 2) in headless Chromium, against
`council serve` and real Postgres: a click on the run's row fetches GET /runs/{id} and
shows the text as text — markup in an answer is data, never rendered."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.domain.commands import RecordedRun
from council.services.execution import execute_run
from council.services.outside import begin_run, end_sessions
from council.services.run_answers import keep_answer
from tests.builders import Ledger
from tests.e2e.conftest import serving
from tests.e2e.test_live_page import CHROMIUM_ARGS, _chromium

TOKEN = "answer-page-token-0123"
ANSWER = '<b id="injected">bold?</b> <script>window.__pwned = true</script> {"summary": "kept"}'


@pytest.fixture
def served(worker_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    with serving({**worker_env, "COUNCIL_API_TOKEN": TOKEN}, tmp_path / "serve.log") as started:
        yield str(started["url"])


def test_the_page_shows_a_runs_answer_as_text(engine: Engine, served: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    chromium = _chromium()
    # Given a run whose kept answer holds markup
    ledger = Ledger.new(engine, evidence_items=1)
    ledger.node("A proposition", cites=[ledger.evidence[0]])
    run_id = ledger.dispatched("claude")
    sha = keep_answer(ledger.uow, run_id, 1, 0, ANSWER)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.goto(f"{served}?thread={ledger.thread_id}")
            page.fill("#token", TOKEN)
            row = page.locator(f'#runs .run-chip[data-run-id="{run_id}"]')
            expect(row).to_have_count(1, timeout=20_000)
            # When its chip is clicked
            row.click()
            # Then the answer shows, as text, with its hash; none of its markup ran
            expect(page.locator("#run-answer")).to_have_text(ANSWER)
            expect(page.locator("#run-answer-title")).to_contain_text(sha[:12])
            expect(page.locator("#injected")).to_have_count(0)
            assert page.evaluate("window.__pwned === undefined") is True
        finally:
            browser.close()


def test_the_page_shows_a_failed_runs_reason_as_text(engine: Engine, served: str) -> None:
    """Issue 29 part 3: the page says why a run failed, under the runs (issue 45: folded)."""
    from playwright.sync_api import expect, sync_playwright

    chromium = _chromium()
    # Given a thread with a succeeded run and a run that failed with a stored reason
    ledger = Ledger.new(engine, evidence_items=1)
    ledger.node("A proposition", cites=[ledger.evidence[0]])
    succeeded = ledger.dispatched("claude")
    assert execute_run(ledger.uow, Recorder(), succeeded).status == "succeeded"
    begun = begin_run(
        ledger.uow, RecordedRun(ledger.thread_id, "outside", "openai/gpt-5"), holder="session-gone", actor="t"
    )
    assert end_sessions(ledger.uow, ["session-gone"]) == [begun.id]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.goto(f"{served}?thread={ledger.thread_id}")
            page.fill("#token", TOKEN)
            failed = page.locator(f'#runs .run-chip[data-run-id="{begun.id}"]')
            expect(failed).to_have_count(1, timeout=20_000)
            # Then the failed run's chip gives its status, and the failures below the runs its
            # reason; the succeeded run is not among them
            expect(failed).to_have_attribute("data-status", "failed")
            expect(page.locator(f'#run-failures li[data-run-id="{begun.id}"]')).to_contain_text(
                f"outside round 1 ({str(begun.id)[:8]}): the MCP session that began it ended"
            )
            expect(page.locator(f'#runs .run-chip[data-run-id="{succeeded}"]')).to_have_attribute(
                "data-status", "succeeded"
            )
            expect(page.locator("#run-failures li")).to_have_count(1)
            expect(page.locator("#runs-summary")).to_contain_text("1 failed")
        finally:
            browser.close()
