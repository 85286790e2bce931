"""Effective independence: what a set of independent support groups is worth when
models share their errors. Pure; the ledger gathers the facts, a decision's snapshot
carries the table it used (so replay is exact and a later table never changes a past
decision).

Definitions (the rule keys are in docs/architecture.md §4):

- A model's *error* on a resolved node version: its run supported the version
  (originate or endorse) and the resolution in force says false, or it disputed the
  version and the resolution says true. An abstain is no stance. A model with several
  runs on one version is taken at its latest stance (the facts arrive in order).
- The *measured* correlation of two models: Pearson's (phi) over the resolved versions
  both took a stance on, of "was in error"; none when fewer than two are shared or
  either never varies.
- The *prior* of a pair: ``error_correlation_prior["same_family"]`` when both models
  are of one provider family, else ``["other"]``.
- The correlation *used*: with ``n`` shared resolved versions and ``m`` =
  ``correlation_min_resolved``, the prior when nothing was measured; the measured value
  when ``n >= m``; else ``n/m`` of the measured and ``1 - n/m`` of the prior (shrunk
  toward the prior until enough records exist). A model with itself: 1.
- ``n_eff`` of a node's support: one vote per independent support group; two groups
  are as correlated as their most correlated pair of models; groups perfectly
  correlated (a used ρ of 1, chained: e.g. the same model twice) are one vote, as
  correlated with another as their most correlated pair; Kish's effective number
  n² / Σᵢⱼ ρᵢⱼ over those votes (ρᵢᵢ = 1, a negative ρ taken as 0), so 1 ≤ n_eff ≤ n
  for n ≥ 1, and a supporter perfectly correlated with an existing one never raises it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

SUPPORT = frozenset({"originate", "endorse"})


@dataclass(frozen=True)
class ResolvedStance:
    """One run's stance on a resolved node version."""

    model: str
    version_id: str
    claim_type: str  # originate | endorse | dispute | abstain
    truth: bool  # the resolution in force


class PairCorrelation(TypedDict):
    models: list[str]  # the two models, sorted
    same_family: bool
    resolved: int  # resolved versions both took a stance on
    measured: float | None
    prior: float
    used: float


class CorrelationPrior(TypedDict):
    same_family: float
    other: float


def errors_by_model(stances: Iterable[ResolvedStance]) -> dict[str, dict[str, bool]]:
    """Per model, per resolved version: whether its (latest) stance was an error."""
    out: dict[str, dict[str, bool]] = {}
    for s in stances:
        if s.claim_type == "abstain":
            continue
        says_true = s.claim_type in SUPPORT
        out.setdefault(s.model, {})[s.version_id] = says_true != s.truth
    return out


# Over the resolved versions two models both took a stance on: how many, how many times
# each was in error, and how many times both were. Errors are 0 or 1, so these sums give
# Pearson's correlation (phi) exactly, and a sum without one version is a subtraction.
ErrorSums = tuple[int, int, int, int]


def error_sums(errors: Mapping[str, Mapping[str, bool]], a: str, b: str) -> ErrorSums:
    ea, eb = errors.get(a, {}), errors.get(b, {})
    shared = set(ea) & set(eb)
    xs = [int(ea[v]) for v in shared]
    ys = [int(eb[v]) for v in shared]
    return len(shared), sum(xs), sum(ys), sum(x * y for x, y in zip(xs, ys, strict=True))


def phi(sums: ErrorSums) -> float | None:
    """Pearson's correlation of two 0/1 error series from their sums; None when fewer than
    two versions are shared or either series never varies."""
    n, sx, sy, sxy = sums
    if n < 2:
        return None
    vx, vy = n * sx - sx * sx, n * sy - sy * sy
    if vx == 0 or vy == 0:
        return None
    return round((n * sxy - sx * sy) / math.sqrt(vx * vy), 6)


def correlation_table(
    models: Iterable[str],
    family: Mapping[str, str],
    stances: Iterable[ResolvedStance],
    prior: CorrelationPrior,
    min_resolved: int,
) -> list[PairCorrelation]:
    """The correlation used for every pair of ``models`` (sorted pairs, sorted list)."""
    errors = errors_by_model(stances)
    pairs = itertools.combinations(sorted(set(models)), 2)
    return table_from_sums({(a, b): error_sums(errors, a, b) for a, b in pairs}, family, prior, min_resolved)


def table_from_sums(
    sums: Mapping[tuple[str, str], ErrorSums],
    family: Mapping[str, str],
    prior: CorrelationPrior,
    min_resolved: int,
) -> list[PairCorrelation]:
    """The table over the pairs ``sums`` names (each sorted), from their error sums."""
    table: list[PairCorrelation] = []
    for (a, b), pair_sums in sorted(sums.items()):
        measured = phi(pair_sums)
        same = family.get(a) is not None and family.get(a) == family.get(b)
        p = float(prior["same_family"] if same else prior["other"])
        table.append(
            {
                "models": [a, b],
                "same_family": same,
                "resolved": pair_sums[0],
                "measured": measured,
                "prior": p,
                "used": shrink(measured, pair_sums[0], p, min_resolved),
            }
        )
    return table


def shrink(measured: float | None, n: int, prior: float, min_resolved: int) -> float:
    if measured is None:
        return prior
    if n >= min_resolved:
        return measured
    w = n / min_resolved
    return round(w * measured + (1 - w) * prior, 6)


def kish(size: int, rho: Mapping[tuple[int, int], float]) -> float:
    """Kish's effective number of ``size`` equally weighted votes whose pairwise
    correlations are ``rho[(i, j)]`` (i < j; missing pairs 0)."""
    if size == 0:
        return 0.0
    total = float(size)
    for i, j in itertools.combinations(range(size), 2):
        total += 2 * max(0.0, min(1.0, rho.get((i, j), 0.0)))
    return round(size * size / total, 6)


def group_n_eff(group_models: Sequence[Iterable[str]], table: Sequence[PairCorrelation]) -> float:
    """``n_eff`` of support groups, each given as the models of its runs."""
    used = {tuple(p["models"]): float(p["used"]) for p in table}
    models = [sorted(set(m)) for m in group_models]

    def rho(a: str, b: str) -> float:
        if a == b:
            return 1.0
        return used.get((min(a, b), max(a, b)), 0.0)

    pairs = {
        (i, j): max((rho(a, b) for a in models[i] for b in models[j]), default=0.0)
        for i, j in itertools.combinations(range(len(models)), 2)
    }
    # Votes perfectly correlated (used 1, chained) carry one vote's information: one vote
    # per such cluster, as correlated with another as their most correlated pair. Then a
    # supporter perfectly correlated with an existing one never raises n_eff (Kish's
    # formula over the raw votes would credit "balancing" two clusters).
    cluster = list(range(len(models)))

    def root(i: int) -> int:
        while cluster[i] != i:
            i = cluster[i]
        return i

    for (i, j), value in pairs.items():
        if value >= 1.0:
            cluster[root(j)] = root(i)
    roots = sorted({root(i) for i in range(len(models))})
    index = {r: n for n, r in enumerate(roots)}
    merged: dict[tuple[int, int], float] = {}
    for (i, j), value in pairs.items():
        a, b = sorted((index[root(i)], index[root(j)]))
        if a != b:
            merged[(a, b)] = max(merged.get((a, b), 0.0), value)
    return kish(len(roots), merged)
