"""The recorded reruns of the blind councils under v1, v2 and v3
(benchmarks/results/alternatives-2026-12-07, made by its run.py with `council eval --json`)
hold what issue 43 asks of exclusive alternatives: under v3 no record has two consolidated
alternatives, and v3 is wrong on no more records than v2 — and the guide's table states them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "alternatives-2026-12-07"
REPORTS = sorted((RESULTS / "blind-council").glob("*.json"))


def test_every_blind_council_is_recorded() -> None:
    assert [p.stem for p in REPORTS] == ["gsm-1", "gsm-3", "mmlu-1", "mmlu-3"]


@pytest.mark.parametrize("report", REPORTS, ids=lambda p: p.stem)
def test_v3_leaves_no_rivals_and_is_wrong_no_more_than_v2(report: Path) -> None:
    council = json.loads(report.read_text())["council"]
    v2, v3 = council["council-default-v2"], council["council-default-v3"]
    assert v3["rivals"] == 0
    assert v3["wrong"] <= v2["wrong"]
    # and the README's table row says the same figures
    table = (RESULTS / "README.md").read_text()
    figures = " | ".join(
        f"{council[f'council-default-{v}']['decided']} / {council[f'council-default-{v}']['wrong']} / "
        f"{council[f'council-default-{v}']['rivals']}"
        for v in ("v1", "v2", "v3")
    )
    assert figures in table, figures
