"""`council eval` (docs/guide/observe.md): what a council added, measured against ground truth. Pure.

A *record* is a thread with its resolutions; its *turns* are its runs in order (an
imported run's turn index; else round, then creation). A turn's *answer* is the node
version it endorsed or originated (the one with the highest confidence if several), or
none. An answer is *correct* when the resolution in force for its node says true; no
answer is not correct. Every figure is defined in docs/guide/observe.md; where it leaves a choice,
the choice is stated here:

- the stance-change class of a flip from answer a to b (both given): ``after_evidence``
  when the later run cites evidence its agent's earlier turn did not; else
  ``self_revision`` when its control run (``dispatch --controls``: the same profile on
  the blind briefing) also answered b; else, over the answers of the turns it had seen,
  ``toward_exposure`` when b was given more often than a, ``against_exposure`` when less
  often, ``no_recorded_cause`` when as often (a turn that saw nothing is never a
  conformity flip);
- a control run is no turn: it is read only as its run's ``control_answer``;
- the council's decision on a record under a rule set: the nodes its rules consolidate
  from the record's claims (the pure evaluation replay uses: independence groups, then
  the rules, each node taken as an open head on the main line; under exclusive_alternatives
  its rivals contested as the committer contests them), with what decided, correct, wrong,
  unjudged and rivals count — council/domain/eval_council.py states it; under
  ``min_effective_support`` the rules read the correlation table of the record's
  models measured on the other resolved records (``model_errors``: per record, whether a
  model's last turn was not correct), shrunk toward the rule set's prior;
- error correlation of two agents: Pearson's (phi) over the resolved records where both
  have a last turn, of "the last turn was not correct"; null when either never varies
  or fewer than two records are shared, and then taken as 0 in n_eff;
- ``n_eff`` of a decided node: Kish's effective number over the distinct agents that
  supported it, n² / Σᵢⱼ ρᵢⱼ (ρᵢᵢ = 1, negative ρ taken as 0), so 1 ≤ n_eff ≤ n.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from council.domain.canonical import canonical_json
from council.domain.eval_council import contests, council, decided_nodes, judged_wrong, node_groups
from council.domain.eval_effective import PairStats, measured, model_errors
from council.domain.independence import GroupingParams
from council.domain.record_facts import Claim as Claim
from council.domain.record_facts import RecordFacts as RecordFacts
from council.domain.record_facts import TurnFacts as TurnFacts

SUPPORT = frozenset({"endorse", "originate"})
BINS = 10
FLIP_KINDS = ("correct_to_wrong", "wrong_to_correct", "wrong_to_wrong")
CAUSES = ("toward_exposure", "against_exposure", "after_evidence", "self_revision", "no_recorded_cause")


@dataclass(frozen=True)
class RuleSetUnderTest:
    id: str
    body: Mapping[str, Any]


@dataclass
class _Flips:
    counts: Counter[str] = field(default_factory=Counter)
    by_cause: dict[str, Counter[str]] = field(default_factory=lambda: {c: Counter() for c in CAUSES})


def evaluate_records(
    records: Sequence[RecordFacts], rule_sets: Sequence[RuleSetUnderTest], grouping: Mapping[str, object]
) -> dict[str, object]:
    """The whole report; ``report_sha256`` is the SHA-256 of its canonical JSON without that key.
    The first rule set is the pinned one (cost is counted over its decided records)."""
    resolved = [r for r in records if r.resolved]
    params = GroupingParams.from_record(grouping)
    grouped = {r.id: node_groups(r, params) for r in resolved}  # the grouping does not depend on the rules
    exclusive = [
        int(rs.body["min_support_groups"]) for rs in rule_sets if rs.body.get("exclusive_alternatives")
    ]
    contested = (
        {r.id: contests(r, params, min(exclusive), grouped[r.id]) for r in resolved} if exclusive else {}
    )
    stats = PairStats(model_errors(resolved))  # council/domain/eval_effective.py
    decisions = {
        rs.id: {
            r.id: decided_nodes(
                grouped[r.id], rs.body, measured(r, rs.body, stats), contested.get(r.id), r.rivals
            )
            for r in resolved
        }
        for rs in rule_sets
    }
    correlations = error_correlations(resolved)
    report: dict[str, object] = {
        "records": len(records),
        "resolved": len(resolved),
        "agents": _agents(resolved),
        "majority": {
            "first_round": _majority(resolved, first=True),
            "last_round": _majority(resolved, first=False),
        },
        "council": {rs.id: council(resolved, decisions[rs.id]) for rs in rule_sets},
        "effective_votes": _effective(
            resolved, decisions[rule_sets[0].id] if rule_sets else {}, correlations
        ),
        "oracle_gap": _oracle_gap(resolved, decisions),
        "calibration": calibration(
            (t.confidence, r.correct(t.answer))
            for r in resolved
            for t in r.turns
            if t.confidence is not None and t.answer is not None
        ),
        "cost": _cost(resolved, decisions[rule_sets[0].id] if rule_sets else {}),
    }
    report["report_sha256"] = hashlib.sha256(canonical_json(report).encode()).hexdigest()
    return report


def _ratio(numerator: int | float, denominator: int | float) -> float | None:
    return None if not denominator else round(numerator / denominator, 6)


def _by_agent(record: RecordFacts) -> dict[str, list[TurnFacts]]:
    turns: dict[str, list[TurnFacts]] = {}
    for turn in record.turns:
        turns.setdefault(turn.agent, []).append(turn)
    return turns


def _agents(records: Sequence[RecordFacts]) -> dict[str, object]:
    first: Counter[str] = Counter()
    last: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    flips: dict[str, _Flips] = {}
    for record in records:
        answers = {t.run_id: t.answer for t in record.turns}
        for agent, turns in _by_agent(record).items():
            seen[agent] += 1
            first[agent] += record.correct(turns[0].answer)
            last[agent] += record.correct(turns[-1].answer)
            tally = flips.setdefault(agent, _Flips())
            for before, after in itertools.pairwise(turns):
                if before.answer is None or after.answer is None or before.answer == after.answer:
                    continue
                was, now = record.correct(before.answer), record.correct(after.answer)
                kind = "correct_to_wrong" if was else ("wrong_to_correct" if now else "wrong_to_wrong")
                if was and now:
                    continue  # two different true answers: no flip in correctness
                cause = stance_cause(before, after, [answers.get(r) for r in after.saw])
                tally.counts[kind] += 1
                tally.by_cause[cause][kind] += 1
    return {
        agent: {
            "records": seen[agent],
            "first_accuracy": _ratio(first[agent], seen[agent]),
            "last_accuracy": _ratio(last[agent], seen[agent]),
            "flips": {
                **{k: flips[agent].counts[k] for k in FLIP_KINDS},
                "by_cause": {c: {k: flips[agent].by_cause[c][k] for k in FLIP_KINDS} for c in CAUSES},
            },
        }
        for agent in sorted(seen)
    }


def stance_cause(before: TurnFacts, after: TurnFacts, seen_answers: Iterable[str | None]) -> str:
    """The class of a change of answer (see the module's docstring)."""
    if after.cited - before.cited:
        return "after_evidence"
    if after.control_answer is not None and after.control_answer == after.answer:
        return "self_revision"
    counts = Counter(a for a in seen_answers if a is not None)
    toward, away = counts[after.answer or ""], counts[before.answer or ""]
    if toward > away:
        return "toward_exposure"
    if toward < away:
        return "against_exposure"
    return "no_recorded_cause"


def majority_answer(turns: Sequence[TurnFacts]) -> tuple[str | None, bool]:
    """The most frequent answer among ``turns`` (ties: the tied answer given earliest), and
    whether there was a tie."""
    counts = Counter(t.answer for t in turns if t.answer is not None)
    if not counts:
        return None, False
    top = max(counts.values())
    tied = [a for a, n in counts.items() if n == top]
    for turn in turns:
        if turn.answer in tied:
            return turn.answer, len(tied) > 1
    raise AssertionError("unreachable")


def _round_majority(record: RecordFacts, *, first: bool) -> tuple[str | None, bool]:
    position = {t.run_id: i for i, t in enumerate(record.turns)}
    chosen = [turns[0] if first else turns[-1] for turns in _by_agent(record).values()]
    chosen.sort(key=lambda t: position[t.run_id])
    return majority_answer(chosen)


def _majority(records: Sequence[RecordFacts], *, first: bool) -> dict[str, object]:
    correct = ties = 0
    for record in records:
        answer, tie = _round_majority(record, first=first)
        correct += record.correct(answer)
        ties += tie
    return {"accuracy": _ratio(correct, len(records)), "ties": ties, "correct": correct}


def error_correlations(records: Sequence[RecordFacts]) -> dict[tuple[str, str], tuple[float | None, int]]:
    """Per pair of agents (sorted names): the correlation of their last turns' errors and
    how many resolved records they shared."""
    errors: dict[str, dict[str, int]] = {}
    for record in records:
        for agent, turns in _by_agent(record).items():
            errors.setdefault(agent, {})[record.id] = 0 if record.correct(turns[-1].answer) else 1
    pairs = {}
    for a, b in itertools.combinations(sorted(errors), 2):
        shared = sorted(set(errors[a]) & set(errors[b]))
        pairs[(a, b)] = (pearson([errors[a][r] for r in shared], [errors[b][r] for r in shared]), len(shared))
    return pairs


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return round(sxy / math.sqrt(sxx * syy), 6)


def n_eff(agents: Sequence[str], correlation: Mapping[tuple[str, str], float | None]) -> float:
    """Kish's effective number of votes over ``agents`` (equal weights)."""
    n = len(agents)
    if n == 0:
        return 0.0
    total = float(n)
    for a, b in itertools.combinations(sorted(agents), 2):
        rho = correlation.get((a, b))
        total += 2 * max(0.0, min(1.0, rho or 0.0))
    return round(n * n / total, 6)


def _effective(
    records: Sequence[RecordFacts],
    decisions: Mapping[str, Sequence[str]],
    correlations: Mapping[tuple[str, str], tuple[float | None, int]],
) -> dict[str, object]:
    rho = {pair: value for pair, (value, _) in correlations.items()}
    nodes: list[dict[str, Any]] = []
    for record in records:
        agent_of = {t.run_id: t.agent for t in record.turns}
        for node in decisions.get(record.id, ()):
            supporters = sorted(
                {agent_of[c.run_id] for c in record.claims if c.node == node and c.type in SUPPORT}
            )
            nodes.append({"record": record.id, "node_version_id": node, "supporters": supporters,
                          "n_eff": n_eff(supporters, rho)})  # fmt: skip
    return {
        "pairs": [
            {"agents": list(pair), "correlation": value, "records": shared}
            for pair, (value, shared) in sorted(correlations.items())
        ],
        "nodes": sorted(nodes, key=lambda n: (n["record"], n["node_version_id"])),
        "mean_n_eff": _ratio(math.fsum(float(n["n_eff"]) for n in nodes), len(nodes)),
    }


def _oracle_gap(
    records: Sequence[RecordFacts], decisions: Mapping[str, Mapping[str, Sequence[str]]]
) -> dict[str, object]:
    """Records where some turn answered correctly but the last-round majority (or the council,
    deciding) chose otherwise."""
    reachable = [r for r in records if any(r.correct(t.answer) for t in r.turns)]
    majority = sum(not r.correct(_round_majority(r, first=False)[0]) for r in reachable)
    chose_otherwise = {
        rs: sum(1 for r in reachable if judged_wrong(r, d[r.id])) for rs, d in decisions.items()
    }
    return {"oracle_correct": len(reachable), "majority": majority, "council": chose_otherwise}


def calibration(pairs: Iterable[tuple[float, bool]]) -> dict[str, object] | None:
    """Brier score and the expected calibration error over 10 equal-width bins (a confidence
    of 1 falls in the last bin), with the bins."""
    items = list(pairs)
    if not items:
        return None
    bins: list[list[tuple[float, bool]]] = [[] for _ in range(BINS)]
    for confidence, correct in items:
        bins[min(int(confidence * BINS), BINS - 1)].append((confidence, correct))
    parts: list[float] = []
    shown = []
    for index, members in enumerate(bins):
        mean_conf = math.fsum(c for c, _ in members) / len(members) if members else None
        accuracy = sum(ok for _, ok in members) / len(members) if members else None
        if members and mean_conf is not None and accuracy is not None:
            parts.append(len(members) / len(items) * abs(accuracy - mean_conf))
        shown.append(
            {
                "lower": index / BINS,
                "upper": (index + 1) / BINS,
                "count": len(members),
                "mean_confidence": None if mean_conf is None else round(mean_conf, 6),
                "accuracy": None if accuracy is None else round(accuracy, 6),
            }
        )
    brier = math.fsum((c - (1.0 if ok else 0.0)) ** 2 for c, ok in items) / len(items)
    return {"turns": len(items), "brier": round(brier, 6), "ece": round(math.fsum(parts), 6), "bins": shown}


def _cost(records: Sequence[RecordFacts], decisions: Mapping[str, Sequence[str]]) -> dict[str, object] | None:
    decided = [r for r in records if decisions.get(r.id)]
    runs = [t for r in decided for t in r.turns if t.prompt_tokens is not None or t.usd is not None]
    if not runs:
        return None
    prompt = sum(t.prompt_tokens or 0 for t in runs)
    completion = sum(t.completion_tokens or 0 for t in runs)
    usd = round(math.fsum(t.usd or 0.0 for t in runs), 6)
    return {
        "decided_records": len(decided),
        "runs_with_usage": len(runs),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "usd": usd,
        "per_decided_record": {
            "prompt_tokens": _ratio(prompt, len(decided)),
            "completion_tokens": _ratio(completion, len(decided)),
            "usd": _ratio(usd, len(decided)),
        },
    }
