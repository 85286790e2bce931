"""Independence grouping at scale: `group_runs` over thousands of claiming runs.

The data imitate a busy node: about 20 % of runs share a parent with 1-3
siblings, about 10 % were shown 1-2 other runs' stances, most runs have no
run-specific input (independent mode), and each run cites 1-4 of 200 evidence
items whose popularity is Zipf-like. The adversarial case has every run cite
the same two items, which must not degrade into comparing all pairs; the even
case has every run cite 4 of the 200 items drawn evenly (few links, long
candidate lists for single-item keys).
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import replace
from typing import Any

from benchmarks.harness import sized
from council.domain.independence import GroupingParams, RunFacts, group_runs

# indep-v1 as stored by migration 0001.
PARAMS = GroupingParams(
    link_parent=True,
    link_exposure=True,
    input_jaccard=0.8,
    evidence_jaccard=0.5,
    evidence_min_shared=2,
)
TARGETS_S = {1000: 0.25, 10000: 3.0}
REPEATS = 3
SEED = 20240601

PROVIDERS = ("anthropic", "openai", "google", "mistral")
STANCES = ("originate", "endorse", "dispute", "abstain")
STANCE_WEIGHTS = (1, 60, 29, 10)
EVIDENCE = tuple(f"ev-{number:03}" for number in range(200))
EVIDENCE_WEIGHTS = tuple(1 / (rank + 1) for rank in range(len(EVIDENCE)))
FEATURES = tuple(f"in-{number:02}" for number in range(40))


def realistic_runs(count: int, seed: int = SEED) -> list[RunFacts]:
    rng = random.Random(seed)
    run_ids = [f"run-{number:05}" for number in range(count)]
    parents: list[str | None] = [None] * count
    position = 0
    while position < count:
        if rng.random() < 1 / 13:  # families average 3 runs: 3/(3 + 12) = 20 % of runs have siblings
            family = rng.randint(2, 4)
            parent = f"orchestrator-{position:05}"  # an orchestrating run that did not claim
            for member in range(position, min(position + family, count)):
                parents[member] = parent
            position += family
        else:
            position += 1
    runs = []
    for number, run_id in enumerate(run_ids):
        exposed: frozenset[str] = frozenset()
        if rng.random() < 0.1:
            exposed = frozenset(rng.sample(run_ids, rng.randint(1, 2))) - {run_id}
        features: frozenset[str] = frozenset()
        if rng.random() < 0.1:  # deliberative or explicitly given extra material
            features = frozenset(rng.sample(FEATURES, rng.randint(1, 4)))
        cited: set[str] = set()
        wanted = rng.randint(1, 4)
        while len(cited) < wanted:
            cited.add(rng.choices(EVIDENCE, weights=EVIDENCE_WEIGHTS)[0])
        runs.append(
            RunFacts(
                run_id=run_id,
                provider=rng.choice(PROVIDERS),
                stance=rng.choices(STANCES, weights=STANCE_WEIGHTS)[0],
                confidence=round(rng.random(), 2),
                parent_run_id=parents[number],
                exposed_to=exposed,
                input_features=features,
                cited_evidence=frozenset(cited),
            )
        )
    rng.shuffle(runs)
    return runs


def adversarial_runs(count: int, seed: int = SEED) -> list[RunFacts]:
    same = frozenset(EVIDENCE[:2])
    return [replace(run, cited_evidence=same) for run in realistic_runs(count, seed)]


def even_runs(count: int, seed: int = SEED, cited: int = 4) -> list[RunFacts]:
    """Every run cites ``cited`` items drawn evenly from the 200: few links, so few
    runs share a component, and each cited item is in many runs' prefixes."""
    rng = random.Random(seed + 1)
    runs = realistic_runs(count, seed)
    return [replace(run, cited_evidence=frozenset(rng.sample(EVIDENCE, cited))) for run in runs]


def _target(count: int) -> float:
    """The brief's budgets; other sizes get the next one up, scaled linearly beyond 10,000."""
    if count <= 1000:
        return TARGETS_S[1000]
    return TARGETS_S[10000] * max(1.0, count / 10000)


def _measure(runs: list[RunFacts]) -> dict[str, Any]:
    timings = []
    groups = 0
    for _ in range(REPEATS):
        started = time.perf_counter()
        groups = len(group_runs(runs, PARAMS))
        timings.append(time.perf_counter() - started)
    median = statistics.median(timings)
    target = _target(len(runs))
    return {
        "runs": len(runs),
        "median_s": round(median, 4),
        "groups": groups,
        "target_s": target,
        "ok": median < target,
    }


def run(sizes: tuple[int, ...] | None = None) -> dict[str, Any]:
    sizes = sizes or sized((1000, 10000), (100,))
    large = max(sizes)
    results = [_measure(realistic_runs(size)) for size in sizes]
    adversarial = _measure(adversarial_runs(large))
    even = _measure(even_runs(large))
    return {
        "benchmark": "grouping",
        "results": results,
        "adversarial": adversarial,
        "even": even,
        "ok": all(result["ok"] for result in [*results, adversarial, even]),
    }
