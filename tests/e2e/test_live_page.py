"""The live page in headless Chromium: `council serve`, real Celery workers, a
deliberation dispatched from the page, runs and a group merge shown without a reload."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from council.ledger import actions
from tests.builders import Ledger
from tests.e2e.conftest import Workers
from tests.published import validate_cli_output

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
TOKEN = "live-page-token"
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
    """`council serve --port 0 --json` in a subprocess; yields its URL."""
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "council.cli", "serve", "--port", "0", "--json"],
        env={**worker_env, "COUNCIL_API_TOKEN": TOKEN},
        stdout=subprocess.PIPE,
        stderr=log,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, f"council serve printed nothing; see {tmp_path / 'serve.log'}"
        started = json.loads(line)
        validate_cli_output(("serve", "--json"), started)
        assert started["host"] == "127.0.0.1" and started["writes_enabled"] is True
        yield str(started["url"])
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _seeded(engine: Engine) -> Ledger:
    ledger = Ledger.new(engine, evidence_items=6)
    ledger.node("SQLite parity establishes query-semantics equivalence", cites=[ledger.evidence[0]])
    gated = ledger.node("The adapter needs a Postgres-only test tier", cites=[ledger.evidence[1]])
    ledger.node("WAL mode is safe for concurrent readers", cites=[ledger.evidence[2]])
    # An unmet pending action keeps one node open through both rounds, so round-2
    # claims land beside the round-1 claims they were shown.
    actions.add_action(
        engine,
        thread_id=ledger.thread_id,
        description="Run the adapter suite on PG 16",
        acceptance_condition="suite green on PG 16",
        version_id=gated["version_id"],
        actor="test",
    )
    return ledger


def test_the_page_shows_runs_arriving_and_groups_merging_live(
    engine: Engine, workers: Workers, served: str
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
            page.goto(f"{served}?thread={ledger.thread_id}")
            expect(page.locator("#stream-state")).to_have_attribute("data-state", "open", timeout=20_000)
            expect(page.locator("#graph .node")).to_have_count(3)
            expect(page.locator("#dispatch")).to_be_disabled()
            page.evaluate("window.__sameDocument = true")
            # When a deliberation of two rounds is dispatched from the page with the token
            page.fill("#token", TOKEN)
            page.select_option("#mode", "deliberative")
            page.fill("#rounds", "2")
            page.click("#dispatch")
            expect(page.locator("#dispatch-result")).to_have_attribute("data-outcome", "ok")
            # Then the runs of both rounds arrive and finish, live
            finished = page.locator('#runs tr[data-round="2"][data-status="succeeded"]')
            expect(finished).to_have_count(3, timeout=240_000)
            expect(page.locator('#runs tr[data-round="1"][data-status="succeeded"]')).to_have_count(3)
            # And a round-2 run shows in one independence group with the round-1 runs it was shown
            merged = page.locator('.group[data-merged="true"][data-rounds="1,2"]')
            expect(merged.first).to_be_visible(timeout=30_000)
            # And all of it without a reload
            assert page.evaluate("window.__sameDocument") is True
            assert int(page.locator("body").get_attribute("data-last-event-id") or 0) > 0
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "live-page.png"), full_page=True)
        finally:
            browser.close()
