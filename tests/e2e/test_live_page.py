"""The live page in headless Chromium: `council serve`, real Celery workers, a
deliberation dispatched from the page, runs and a group merge shown without a reload."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from council.domain.commands import NewAction
from council.services.claims import add_action
from tests.builders import Ledger
from tests.e2e.conftest import Workers, serving

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
TOKEN = "live-page-token-0123"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str:
    found = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
    if found is None:
        pytest.skip("no chromium: install it with `apt-get install -y chromium` (.ci/run does, as root)")
    return found


@pytest.fixture
def served(worker_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """`council serve` with a token: reads need it as much as writes do."""
    with serving({**worker_env, "COUNCIL_API_TOKEN": TOKEN}, tmp_path / "serve.log") as started:
        assert started["host"] == "127.0.0.1" and started["writes_enabled"] is True
        assert started["reads_need_token"] is True
        yield str(started["url"])


def _seeded(engine: Engine) -> Ledger:
    ledger = Ledger.new(engine, evidence_items=6)
    ledger.node("SQLite parity establishes query-semantics equivalence", cites=[ledger.evidence[0]])
    gated = ledger.node("The adapter needs a Postgres-only test tier", cites=[ledger.evidence[1]])
    ledger.node("WAL mode is safe for concurrent readers", cites=[ledger.evidence[2]])
    # An unmet pending action keeps one node open through both rounds, so round-2
    # claims land beside the round-1 claims they were shown.
    add_action(
        ledger.uow,
        NewAction(
            thread=ledger.thread_id,
            description="Run the adapter suite on PG 16",
            acceptance_condition="suite green on PG 16",
            version=gated["version_id"],
        ),
        actor="test",
    )
    return ledger


def test_the_page_shows_runs_arriving_and_groups_merging_live(
    engine: Engine, workers: Workers, served: str, tmp_path: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    chromium = _chromium()
    # Given a thread with three open propositions, real workers, and the page open on it
    ledger = _seeded(engine)
    workers("--queues", "runs,commit,maintenance")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            sent: list[tuple[str, str]] = []  # (url, Authorization header) of every request
            page.on("request", lambda r: sent.append((r.url, r.headers.get("authorization", ""))))
            page.goto(f"{served}?thread={ledger.thread_id}")
            # Without the token the page shows nothing of the ledger and asks for it
            expect(page.locator("#thread-title")).to_have_text("this server needs its API token")
            expect(page.locator("#stream-state")).to_have_attribute("data-state", "closed")
            expect(page.locator("#graph .node")).to_have_count(0)
            expect(page.locator("#dispatch")).to_be_disabled()
            page.evaluate("window.__sameDocument = true")
            # When the token is entered, the stream opens (fetch with an Authorization header)
            page.fill("#token", TOKEN)
            expect(page.locator("#stream-state")).to_have_attribute("data-state", "open", timeout=20_000)
            expect(page.locator("#graph .node")).to_have_count(3)
            assert TOKEN not in page.url
            # And a deliberation of two rounds is dispatched from the page with the token
            page.select_option("#mode", "deliberative")
            page.fill("#rounds", "2")
            page.click("#dispatch")
            expect(page.locator("#dispatch-result")).to_have_attribute("data-outcome", "ok")
            # Then the runs of both rounds arrive and finish, live
            finished = page.locator('#runs .run-chip[data-round="2"][data-status="succeeded"]')
            expect(finished).to_have_count(3, timeout=240_000)
            expect(page.locator('#runs .run-chip[data-round="1"][data-status="succeeded"]')).to_have_count(3)
            # And a round-2 run shows in one independence group with the round-1 runs it was shown
            merged = page.locator('.group[data-merged="true"][data-rounds="1,2"]')
            expect(merged.first).to_be_visible(timeout=30_000)
            # And a run's row, clicked, shows the answer it returned, as text
            run_row = page.locator('#runs .run-chip[data-round="1"][data-status="succeeded"]').first
            run_id = run_row.get_attribute("data-run-id")
            run_row.click()
            expect(page.locator("#run-answer")).to_have_attribute("data-run-id", run_id or "")
            expect(page.locator("#run-answer")).to_contain_text('"claims"')
            expect(page.locator("#run-answer-title")).to_contain_text("sha256")
            assert page.locator("#run-answer *").count() == 0  # text only, no element made of it
            # And all of it without a reload, and no request named the token in its URL
            assert page.evaluate("window.__sameDocument") is True
            assert int(page.locator("body").get_attribute("data-last-event-id") or 0) > 0
            assert not [url for url, _ in sent if TOKEN in url]
            streams = [auth for url, auth in sent if url.endswith("/stream")]
            assert streams and streams[-1] == f"Bearer {TOKEN}"
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "live-page.png"), full_page=True)
        finally:
            browser.close()
    # And the server logged no token
    assert TOKEN not in (tmp_path / "serve.log").read_text()
