"""`council eval` under a rule set with min_effective_support (docs/guide/observe.md): the
correlation table each imported record is decided with, measured on the other resolved
records. Pure; split from council/domain/observation.py, which calls it."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from council.domain.effective import ErrorSums, error_sums, table_from_sums

if TYPE_CHECKING:
    from council.domain.record_facts import RecordFacts, TurnFacts


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
    """Per pair of models (sorted), the error sums over every resolved record both
    answered, so a record's table without that record is a subtraction."""

    def __init__(self, errors: Mapping[str, Mapping[str, bool]]) -> None:
        self.errors = errors
        self.sums = {(a, b): error_sums(errors, a, b) for a, b in itertools.combinations(sorted(errors), 2)}

    def without(self, a: str, b: str, record: str) -> ErrorSums:
        """The sums of models ``a`` < ``b`` on the records but ``record``."""
        n, sx, sy, sxy = self.sums.get((a, b), (0, 0, 0, 0))
        ea, eb = self.errors.get(a, {}), self.errors.get(b, {})
        if record in ea and record in eb:
            x, y = int(ea[record]), int(eb[record])
            n, sx, sy, sxy = n - 1, sx - x, sy - y, sxy - x * y
        return n, sx, sy, sxy


def measured(record: RecordFacts, rules: Mapping[str, object], stats: PairStats) -> dict[str, object]:
    """What a v3 snapshot would carry for the record under ``rules``: its runs' models and,
    under min_effective_support, the error-correlation table measured on the *other*
    records (the committer measures on every resolved version but the one it decides),
    shrunk toward the rule set's prior as council/domain/effective.py does."""
    if rules.get("min_effective_support") is None:
        return {}
    given = rules.get("error_correlation_prior")
    prior = given if isinstance(given, dict) else {}
    least = rules.get("correlation_min_resolved")
    family = {_model(t): t.provider for t in record.turns}
    pairs = itertools.combinations(sorted(family), 2)
    table = table_from_sums(
        {(a, b): stats.without(a, b, record.id) for a, b in pairs},
        family,
        {"same_family": _share(prior.get("same_family")), "other": _share(prior.get("other"))},
        least if isinstance(least, int) and least > 0 else 1,
    )
    runs = [{"id": t.run_id, "agent": t.agent, "model": _model(t)} for t in record.turns]
    return {"runs": runs, "correlations": table}


def _share(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
