"""The page's independence graph at 60 runs (issue 35 §6), in headless Chromium against
`council serve` and real Postgres: one box per independence group holding exactly its
runs and labelled with its size and agents, run labels that are agent names and never
overlap or leave the viewport (at two widths), a run's claims and answer shown as text
on a click or on Enter, hostile agent names and answers inert, and the thread's cost
line equal to the API's totals. Screenshots are kept in test-artifacts/."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.services.run_answers import keep_answer
from tests.builders import ACTOR, Ledger
from tests.e2e.conftest import serving
from tests.e2e.test_governance_page import _png_size
from tests.e2e.test_live_page import ARTIFACTS, CHROMIUM_ARGS, _chromium

TOKEN = "independence-page-token"
PROVIDERS = {
    "claude": "anthropic",
    "codex": "openai",
    "glm": "zhipu",
    "gemini": "google",
    "qwen": "alibaba",
    "deepseek": "deepseek",
    "kimi": "moonshot",
    "mistral": "mistral",
    "grok": "xai",
    "llama": "meta",
}
AGENTS = tuple(PROVIDERS)
# Deliberations of (agents, rounds): each round shown the round before it, within its own
# deliberation only, so each is one independence group: 15 + 12 + 8 + 6 + 4 = 45 runs.
DELIBERATIONS = ((5, 3), (4, 3), (4, 2), (3, 2), (2, 2))
BLIND = 15  # blind runs, each a group of its own: 60 runs in all
HOSTILE = '<img src=x onerror="window.__pwned=1">'
LONG = "reviewer-with-an-agent-name-far-too-long-for-any-cell"
HOSTILE_ANSWER = (
    '<b id="injected">bold?</b> <script>window.__pwned = true</script> {"summary": "kept"} '
    + "the benchmark reran with WAL and eight readers; " * 60
)
EXCERPT = 1500


@dataclass
class Sixty:
    ledger: Ledger
    version: UUID
    groups: list[frozenset[str]] = field(default_factory=list)  # each independence group's runs
    agent: dict[str, str] = field(default_factory=dict)
    round: dict[str, int] = field(default_factory=dict)
    answer: dict[str, str] = field(default_factory=dict)
    rationale: dict[str, str] = field(default_factory=dict)
    cost: dict[str, float | int] = field(
        default_factory=lambda: {
            "usd": 0.0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "runs_priced": 0,
            "runs_unpriced": 0,
        }
    )

    def run(
        self,
        agent: str,
        round_no: int,
        *,
        stance: str = "endorse",
        exposed_to: tuple[str, ...] = (),
        parent: str | None = None,
        answer: str | None = None,
    ) -> str:
        """A run recorded by hand that claims on the version, keeps an answer and ends
        succeeded with its usage (every sixth one unpriced), as a worker ends a run."""
        n = len(self.agent)
        ledger = self.ledger
        run_id = ledger.open_run(
            PROVIDERS.get(agent, "anthropic"),
            agent,
            exposed_to=[UUID(r) for r in exposed_to],
            parent_run_id=UUID(parent) if parent else None,
            round_no=round_no,
        )
        rationale = f"{agent} in round {round_no}: reason number {n}"
        ledger.claim(run_id, self.version, stance, confidence=0.55 + (n % 4) / 10, rationale=rationale)
        text = answer or json.dumps({"summary": f"{agent} answers in round {round_no}", "n": n})
        keep_answer(ledger.uow, run_id, 1, 0, text)
        prompt, completion = 900 + 13 * n, 150 + 7 * n
        priced = n % 6 != 5
        usd = round(0.0007 * (1 + n % 9), 4) if priced else None
        with ledger.uow() as tx:
            fenced = tx.runs.fence(run_id, 1)
            assert fenced is not None
            usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
            tx.runs.finish(
                fenced,
                1,
                status="succeeded",
                usage=usage if priced else {**usage, "unpriced": True},
                cost_usd=usd,
                actor=ACTOR,
            )
        key = str(run_id)
        self.agent[key], self.round[key], self.answer[key], self.rationale[key] = (
            agent,
            round_no,
            text,
            rationale,
        )
        self.cost["prompt_tokens"] += prompt
        self.cost["completion_tokens"] += completion
        self.cost["usd"] += usd or 0.0
        self.cost["runs_priced" if priced else "runs_unpriced"] += 1
        return key


def _sixty(engine: Engine) -> Sixty:
    ledger = Ledger.new(engine, title="WAL under sixty runs", evidence_items=1)
    node = ledger.node("WAL mode is safe for concurrent readers", cites=[ledger.evidence[0]])
    sixty = Sixty(ledger, UUID(str(node["version_id"])))
    first = 0
    for size, rounds in DELIBERATIONS:
        agents = AGENTS[first : first + size]
        first = (first + 2) % len(AGENTS)
        members: list[str] = []
        before: dict[str, str] = {}
        for round_no in range(1, rounds + 1):
            this: dict[str, str] = {}
            for i, agent in enumerate(agents):
                stance = "dispute" if i == size - 1 and round_no == rounds and size > 2 else "endorse"
                this[agent] = sixty.run(
                    agent,
                    round_no,
                    stance=stance,
                    exposed_to=tuple(before.values()),
                    parent=before.get(agent),
                )
            members += this.values()
            before = this
        sixty.groups.append(frozenset(members))
    blind = [*(AGENTS[i % len(AGENTS)] for i in range(BLIND - 2)), HOSTILE, LONG]
    for i, agent in enumerate(blind):
        stance = "dispute" if i % 5 == 4 else "abstain" if i % 7 == 6 else "endorse"
        answer = HOSTILE_ANSWER if agent == HOSTILE else None
        sixty.groups.append(frozenset([sixty.run(agent, 1, stance=stance, answer=answer)]))
    assert len(sixty.agent) == 60
    return sixty


@pytest.fixture
def served(worker_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    with serving({**worker_env, "COUNCIL_API_TOKEN": TOKEN}, tmp_path / "serve.log") as started:
        yield str(started["url"]).rstrip("/")


def _api(served: str, path: str) -> Any:
    request = urllib.request.Request(f"{served}{path}", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


GEOMETRY = """() => {
  const graph = document.querySelector("svg.indep-graph");
  const at = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  return {
    viewport: window.innerWidth,
    scrollWidth: document.documentElement.scrollWidth,
    graphWidth: Number(graph.getAttribute("width")),
    runs: [...graph.querySelectorAll(".run-vertex")].map((v) => ({
      run: v.dataset.runId, label: v.querySelector("text.label").textContent,
      text: at(v.querySelector("text.label")), cell: at(v.querySelector("rect")),
    })),
    clusters: [...graph.querySelectorAll(".indep-cluster")].map((c) => ({
      size: Number(c.dataset.size), head: c.querySelector("text.head").textContent,
      agents: c.querySelector("text.agents").textContent, box: at(c.querySelector("rect")),
      texts: [at(c.querySelector("text.head")), at(c.querySelector("text.agents"))],
    })),
  };
}"""

Box = list[float]


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5


def _inside(inner: Box, outer: Box) -> bool:
    return (
        inner[0] >= outer[0] - 0.5
        and inner[1] >= outer[1] - 0.5
        and inner[2] <= outer[2] + 0.5
        and inner[3] <= outer[3] + 0.5
    )


def _unclipped(text: str) -> str:
    return text[:-1] if text.endswith("…") else text


def _check_layout(geometry: dict[str, Any], sixty: Sixty) -> None:
    """No two labels (or cells, or boxes) overlap; each label fits its cell and the viewport;
    each group's box holds exactly that group's runs and names its size and agents."""
    runs, clusters = geometry["runs"], geometry["clusters"]
    assert len(runs) == 60 and len(clusters) == len(sixty.groups)
    assert geometry["scrollWidth"] <= geometry["viewport"], "the page scrolls sideways"
    for one, other in combinations(runs, 2):
        assert not _overlap(one["text"], other["text"]), (one["label"], other["label"])
        assert not _overlap(one["cell"], other["cell"]), (one["label"], other["label"])
    for one, other in combinations(clusters, 2):
        assert not _overlap(one["box"], other["box"]), (one["head"], other["head"])
    for drawn in runs:
        run = drawn["run"]
        assert _inside(drawn["text"], drawn["cell"]), f"label {drawn['label']!r} overflows its cell"
        assert drawn["text"][2] <= geometry["viewport"]
        # A label is the agent and round, never the run's id
        assert run[:8] not in drawn["label"]
        full = f"{sixty.agent[run]} r{sixty.round[run]}"
        if sixty.agent[run] in PROVIDERS:
            assert drawn["label"] == full
        else:
            assert drawn["label"].endswith("…") and full.startswith(_unclipped(drawn["label"]))
    held = []
    for cluster in clusters:
        inside = frozenset(r["run"] for r in runs if _inside(r["cell"], cluster["box"]))
        held.append(inside)
        assert cluster["size"] == len(inside)
        assert cluster["head"].startswith(f"group {len(held)} · {len(inside)} run")
        for text in cluster["texts"]:
            assert _inside(text, cluster["box"]), cluster["head"]
        names = {sixty.agent[r] for r in inside}
        if names <= set(PROVIDERS):
            assert all(name in cluster["agents"] for name in names), (names, cluster["agents"])
        else:
            [name] = names
            assert name.startswith(_unclipped(cluster["agents"]))
    assert sorted(held, key=sorted) == sorted(sixty.groups, key=sorted)


def test_sixty_runs_read_as_labelled_group_boxes_with_answers_on_click(engine: Engine, served: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    chromium = _chromium()
    # Given a thread whose node has 60 runs in 20 independence groups, each with its usage
    sixty = _sixty(engine)
    thread, version = sixty.ledger.thread_id, sixty.version
    # (the API's groups are the ones built: their components, and its cost the sums)
    components = {frozenset(g["component_runs"]) for g in _api(served, f"/nodes/{version}/groups")["groups"]}
    assert components <= set(sixty.groups)
    cost = _api(served, f"/threads/{thread}")["cost"]
    steps = _api(served, f"/threads/{thread}/formation")["steps"]
    assert cost["usd"] == pytest.approx(sixty.cost["usd"])
    counted = {k: cost[k] for k in cost if k not in ("usd", "unpriced_reasons")}
    assert counted == {k: v for k, v in sixty.cost.items() if k != "usd"}
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1200})
            # A script error or a refusal by the content security policy (the 401s before the
            # token is entered, and the absent favicon, are no error of the page's)
            errors: list[str] = []
            page.on(
                "console",
                lambda m: (
                    errors.append(m.text)
                    if m.type == "error" and not m.text.startswith("Failed to load resource")
                    else None
                ),
            )
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{served}/?thread={thread}")
            page.fill("#token", TOKEN)
            graph = page.locator(f'.formation[data-version-id="{version}"] svg.indep-graph')
            expect(graph).to_have_attribute("data-runs", "60", timeout=30_000)
            expect(page.locator("#runs .run-chip")).to_have_count(60, timeout=30_000)
            expect(graph.locator(".run-vertex text.label", has_text=" r3")).to_have_count(9)
            # Then the graph has one box per group, 60 runs, labels that do not collide
            expect(graph.locator(".indep-cluster")).to_have_count(len(sixty.groups))
            _check_layout(page.evaluate(GEOMETRY), sixty)
            # And the thread's cost line gives the API's totals
            why = "; ".join(cost["unpriced_reasons"])  # each model without a price, named
            unpriced = (
                f"; {cost['runs_unpriced']} run(s) unpriced ({why}: cost unknown)"
                if cost["runs_unpriced"]
                else ""
            )
            expect(page.locator("#thread-cost")).to_have_text(
                f"cost: ${cost['usd']:.4f} over {cost['runs_priced']} priced run(s); "
                f"{cost['prompt_tokens']} prompt + {cost['completion_tokens']} completion tokens{unpriced}"
            )
            assert cost["runs_unpriced"] == 10 and cost["runs_priced"] == 50
            page.locator("#formation-panel").screenshot(path=str(ARTIFACTS / "independence-60.png"))
            page.screenshot(path=str(ARTIFACTS / "page-60.png"), full_page=True)

            # When the run with a hostile name and answer is clicked
            [hostile] = [r for r, a in sixty.agent.items() if a == HOSTILE]
            vertex = graph.locator(f'.run-vertex[data-run-id="{hostile}"]')
            assert HOSTILE.startswith(_unclipped(vertex.locator("text.label").text_content() or "!"))
            vertex.click()
            detail = page.locator(f'.run-detail[data-version-id="{version}"]')
            # Then its claims and the start of its answer show, as text; none of its markup ran
            expect(detail).to_have_attribute("data-run-id", hostile)
            expect(detail.locator("h5")).to_have_text(
                f"{HOSTILE} · round 1 · external · succeeded", timeout=20_000
            )
            expect(detail.locator(".detail-claims .rationale")).to_have_text(sixty.rationale[hostile])
            excerpt = detail.locator("pre.answer-excerpt")
            expect(excerpt).to_have_text(HOSTILE_ANSWER[: EXCERPT - 1] + "…")
            expect(detail.locator("h6").last).to_contain_text(
                f"first {EXCERPT} of {len(HOSTILE_ANSWER)} characters"
            )
            assert excerpt.locator("*").count() == 0
            expect(page.locator("#injected")).to_have_count(0)
            expect(page.locator("img")).to_have_count(0)
            assert page.evaluate("window.__pwned === undefined") is True
            expect(vertex).to_have_attribute("aria-pressed", "true")

            # When the first deliberator's run of round 2 is focused and Enter pressed
            [deliberator] = [r for r in sixty.groups[0] if (sixty.agent[r], sixty.round[r]) == ("claude", 2)]
            other = graph.locator(f'.run-vertex[data-run-id="{deliberator}"]')
            other.focus()
            page.keyboard.press("Enter")
            # Then its claims and answer replace the first, and its links are the ones lit
            expect(detail).to_have_attribute("data-run-id", deliberator)
            expect(detail.locator(".detail-claims .rationale")).to_have_text(sixty.rationale[deliberator])
            expect(excerpt).to_have_text(sixty.answer[deliberator])
            expect(detail.locator(".meta").first).to_contain_text("group 1 of 20 (15 runs)")
            joined = [(s["run_id"], link["run_id"]) for s in steps for link in s["links"]]
            lit = [pair for pair in joined if deliberator in pair]
            assert len(lit) >= 5  # it joined the five blind runs of its deliberation
            expect(graph.locator(".link")).to_have_count(len(joined))
            expect(graph.locator(".link.hot")).to_have_count(len(lit))
            expect(vertex).to_have_attribute("aria-pressed", "false")
            page.locator("#formation-panel").screenshot(path=str(ARTIFACTS / "independence-60-selected.png"))

            # And at a narrower window the boxes pack again, still readable, the selection kept
            page.set_viewport_size({"width": 900, "height": 1200})
            page.wait_for_function(
                "() => Number(document.querySelector('svg.indep-graph').getAttribute('width')) < 900"
            )
            _check_layout(page.evaluate(GEOMETRY), sixty)
            expect(graph.locator(f'.run-vertex[data-run-id="{deliberator}"]')).to_have_attribute(
                "aria-pressed", "true"
            )
            expect(detail).to_have_attribute("data-run-id", deliberator)
            assert page.evaluate("document.activeElement.dataset.runId") == deliberator  # focus kept
            page.locator("#formation-panel").screenshot(path=str(ARTIFACTS / "independence-60-narrow.png"))
            assert errors == []
        finally:
            browser.close()
    width, height = _png_size(ARTIFACTS / "independence-60.png")
    assert width >= 1200 and height >= 400
