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


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    n = len(xs)
    if n < 2:
        return None
    mx, my = math.fsum(xs) / n, math.fsum(ys) / n
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    syy = math.fsum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    sxy = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return round(sxy / math.sqrt(sxx * syy), 6)


def correlation_table(
    models: Iterable[str],
    family: Mapping[str, str],
    stances: Iterable[ResolvedStance],
    prior: CorrelationPrior,
    min_resolved: int,
) -> list[PairCorrelation]:
    """The correlation used for every pair of ``models`` (sorted pairs, sorted list)."""
    return table_from_errors(errors_by_model(stances), models, family, prior, min_resolved)


def table_from_errors(
    errors: Mapping[str, Mapping[str, bool]],
    models: Iterable[str],
    family: Mapping[str, str],
    prior: CorrelationPrior,
    min_resolved: int,
    leave_out: frozenset[str] = frozenset(),
) -> list[PairCorrelation]:
    """``correlation_table`` from ``errors_by_model``, the versions ``leave_out`` not counted
    (`council eval` measures each record's table on the other records)."""
    table: list[PairCorrelation] = []
    for a, b in itertools.combinations(sorted(set(models)), 2):
        ea, eb = errors.get(a, {}), errors.get(b, {})
        shared = sorted((set(ea) & set(eb)) - leave_out)
        measured = pearson([float(ea[v]) for v in shared], [float(eb[v]) for v in shared])
        same = family.get(a) is not None and family.get(a) == family.get(b)
        p = float(prior["same_family"] if same else prior["other"])
        table.append(
            {
                "models": [a, b],
                "same_family": same,
                "resolved": len(shared),
                "measured": measured,
                "prior": p,
                "used": shrink(measured, len(shared), p, min_resolved),
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
