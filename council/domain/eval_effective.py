"""`council eval` under a rule set with min_effective_support (docs/guide/observe.md): the
correlation table each imported record is decided with, measured on the other resolved
records. Pure; split from council/domain/observation.py, which calls it."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from council.domain.effective import PairCorrelation, shrink

if TYPE_CHECKING:
    from council.domain.observation import RecordFacts, TurnFacts


def _model(turn: TurnFacts) -> str:
    return turn.model or turn.agent


def model_errors(records: Sequence[RecordFacts]) -> dict[str, dict[str, bool]]:
    """Per model, per resolved record: whether its last turn was not correct (as
    ``error_correlations`` measures agents). A record, not a node version, is the unit: an
    imported turn endorses one option and takes no stance on the others, so over versions
    two models would share only the ones they agreed on."""
    errors: dict[str, dict[str, bool]] = {}
    for record in records:
        for turn in record.turns:  # in turn order: the last turn of a model wins
            errors.setdefault(_model(turn), {})[record.id] = not record.correct(turn.answer)
    return errors


class PairStats:
    """Per pair of models (sorted), over the resolved records both answered: how many,
    and the sums of their errors and of their product (errors are 0 or 1), so the
    correlation without one record is a subtraction, not a pass over the others."""

    def __init__(self, errors: Mapping[str, Mapping[str, bool]]) -> None:
        self.errors = errors
        self.sums: dict[tuple[str, str], tuple[int, int, int, int]] = {}
        for a, b in itertools.combinations(sorted(errors), 2):
            shared = set(errors[a]) & set(errors[b])
            xs = [int(errors[a][r]) for r in shared]
            ys = [int(errors[b][r]) for r in shared]
            self.sums[(a, b)] = (
                len(shared),
                sum(xs),
                sum(ys),
                sum(x * y for x, y in zip(xs, ys, strict=True)),
            )

    def without(self, a: str, b: str, record: str) -> tuple[int, float | None]:
        """(shared records, phi) of models ``a`` < ``b`` on the records but ``record``."""
        n, sx, sy, sxy = self.sums.get((a, b), (0, 0, 0, 0))
        ea, eb = self.errors.get(a, {}), self.errors.get(b, {})
        if record in ea and record in eb:
            x, y = int(ea[record]), int(eb[record])
            n, sx, sy, sxy = n - 1, sx - x, sy - y, sxy - x * y
        if n < 2:
            return n, None
        vx, vy = n * sx - sx * sx, n * sy - sy * sy
        if vx == 0 or vy == 0:
            return n, None
        return n, round((n * sxy - sx * sy) / math.sqrt(vx * vy), 6)


def measured(record: RecordFacts, rules: Mapping[str, object], stats: PairStats) -> dict[str, object]:
    """What a v3 snapshot would carry for the record under ``rules``: its runs' models and,
    under min_effective_support, the error-correlation table measured on the *other*
    records (the committer measures on every resolved version but the one it decides),
    shrunk toward the rule set's prior as council/domain/effective.py does."""
    if rules.get("min_effective_support") is None:
        return {}
    given = rules.get("error_correlation_prior")
    prior: Mapping[str, object] = given if isinstance(given, dict) else {"same_family": 0.0, "other": 0.0}
    least = rules.get("correlation_min_resolved")
    least = least if isinstance(least, int) and least > 0 else 1
    family = {_model(t): t.provider for t in record.turns}
    table: list[PairCorrelation] = []
    for a, b in itertools.combinations(sorted(family), 2):
        shared, phi = stats.without(a, b, record.id)
        same = family[a] == family[b]
        value = prior.get("same_family" if same else "other")
        p = float(value) if isinstance(value, int | float) else 0.0
        table.append({"models": [a, b], "same_family": same, "resolved": shared, "measured": phi,
                      "prior": p, "used": shrink(phi, shared, p, least)})  # fmt: skip
    runs = [{"id": t.run_id, "agent": t.agent, "model": _model(t)} for t in record.turns]
    return {"runs": runs, "correlations": table}
