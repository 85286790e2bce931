"""`council eval`'s council (docs/guide/observe.md): the decision the rules make on each
record's nodes from its claims, and how it fares against the resolutions. Pure; split from
council/domain/observation.py, which calls it.

- Each node is decided by the pure evaluation replay uses (``rules.decide``), taken as an
  open head on the main line with no fork, pending action or challenged evidence.
- Under a rule set with ``exclusive_alternatives``, a record's rival nodes (its options,
  the nodes joined by contradicts edges: ``RecordFacts.rivals``) are contested as the
  committer contests them (council/domain/alternatives.py): each node's groups count its
  rivals' supporters as disputes, its support must beat every rival's by the margin, and
  no rival may be live. What is "live" here is what this evaluation consolidated: a set's
  members are decided one at a time, strongest support first (then by id), as a committer
  deciding them one after another would, so at most one of a set consolidates.
- A record is *decided* when at least one node consolidates. Only consolidated nodes that
  carry a resolution are judged: the record is *wrong* when one of them is resolved false,
  *correct* when none is and one is resolved true, and *unjudged* when none carries a
  resolution (a live thread's proposition nobody resolved). ``accuracy`` is correct over
  judged (decided and not unjudged); an imported record resolves every node, so there
  judged is decided. ``rivals``: records with two or more consolidated nodes that are
  rivals of one another (0 under any rule set with exclusive_alternatives).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from council.domain import alternatives
from council.domain.alternatives import Contest, Member
from council.domain.independence import Group, GroupingParams, RunFacts, group_runs
from council.domain.rules import decide
from council.domain.snapshot import Snapshot

if TYPE_CHECKING:
    from council.domain.record_facts import RecordFacts

DECIDED_HERE = "consolidated by this evaluation"  # a rival's "live consolidation" in eval


def node_facts(record: RecordFacts) -> dict[str, list[RunFacts]]:
    """The facts of each run that claimed on each node version the record's claims name."""
    turns = {t.run_id: (t, frozenset(t.saw)) for t in record.turns}
    facts: dict[str, list[RunFacts]] = {}
    for c in record.claims:
        found = turns.get(c.run_id)
        if found is None:
            continue
        turn, saw = found
        facts.setdefault(c.node, []).append(
            RunFacts(
                run_id=c.run_id,
                provider=turn.provider,
                stance=c.type,
                confidence=c.confidence,
                parent_run_id=turn.parent_run_id,
                exposed_to=saw,
                input_features=turn.input_features,
                cited_evidence=turn.cited,
            )
        )
    return dict(sorted(facts.items()))


def node_groups(record: RecordFacts, params: GroupingParams) -> dict[str, list[Group]]:
    """The independence groups of each node version the record's claims name."""
    return {node: group_runs(facts, params) for node, facts in node_facts(record).items()}


def contests(
    record: RecordFacts,
    params: GroupingParams,
    need: int = 1,
    direct: Mapping[str, list[Group]] | None = None,
) -> dict[str, Contest]:
    """Each node of a set of rivals with its contest (no rival live yet): computed once per
    record for every rule set with exclusive_alternatives (the grouping is the rules' input).
    A set none of whose nodes has ``need`` independent support groups of its own is left
    out: rivals' supporters counted as disputes only ever join components, so its nodes
    cannot reach them with the contest either (none consolidates, none is compared).
    ``direct``: each node's own groups, when the caller has them (``node_groups``)."""
    if not record.rivals:
        return {}
    if direct is None:
        direct = {n: group_runs(f, params) for n, f in node_facts(record).items()}
    able = {n for n in record.rivals if _may_consolidate(direct.get(n, []), {"min_support_groups": need})}
    if not able:
        return {}  # most records: no alternative has the support, so none is contested
    facts = node_facts(record)
    links = [(node, rival) for node, rivals in record.rivals.items() for rival in rivals]
    found: dict[str, Contest] = {}
    for members in alternatives.components(links, record.rivals):
        if not members & able:
            continue
        found.update(
            alternatives.contests(
                [Member(node, tuple(facts.get(node, ()))) for node in sorted(members)], params
            )
        )
    return found


def decided_nodes(
    groups: Mapping[str, list[Group]],
    rules: Mapping[str, object],
    measured: Mapping[str, object] | None = None,
    contested: Mapping[str, Contest] | None = None,
    rivals: Mapping[str, frozenset[str]] | None = None,
) -> tuple[str, ...]:
    """The node versions the rules consolidate, given each one's groups (sorted), with what
    ``measured`` gives (the record's runs and correlation table; no dispatch sent an
    imported record's council, so min_council_answered has nothing missing) and, under
    exclusive_alternatives, the record's ``rivals`` and each contest (``contests``; a rival
    without one cannot consolidate: see there)."""
    body = dict(rules)
    exclusive = bool(body.get("exclusive_alternatives")) and bool(rivals)
    snapshot = _snapshot(measured)
    decided: list[str] = []
    for node, node_groups_ in sorted(groups.items()):
        if exclusive and node in (rivals or {}):
            continue  # decided with its set, below
        alone = (
            Contest(tuple(node_groups_), (), ()) if exclusive or body.get("exclusive_alternatives") else None
        )
        if (
            _may_consolidate(node_groups_, body)
            and decide(_at(snapshot, node), body, node_groups_, alone).positive
        ):
            decided.append(node)
    if exclusive and contested:
        decided += _decide_sets(contested, body, snapshot)
    return tuple(sorted(decided))


def _decide_sets(
    contested: Mapping[str, Contest], body: dict[str, object], snapshot: dict[str, object]
) -> list[str]:
    """Each set of rivals decided one member at a time, strongest support first (then by id):
    a member sees the ones consolidated before it as live rivals."""
    effective = body.get("min_effective_support") is not None
    models = alternatives.snapshot_models(cast(Snapshot, snapshot)) if effective else None
    table = snapshot.get("correlations", [])

    def strength(node: str) -> tuple[float, str]:
        return (-alternatives.support(contested[node].groups, models, table), node)

    decided: list[str] = []
    for members in _sets(contested):
        live: set[str] = set()
        for node in sorted(members, key=strength):
            contest = contested[node]
            seen = tuple(
                dataclasses.replace(r, live=DECIDED_HERE if r.version_id in live else None)
                for r in contest.rivals
            )
            contest = dataclasses.replace(contest, rivals=seen)
            if (
                _may_consolidate(list(contest.groups), body)
                and decide(_at(snapshot, node), body, list(contest.groups), contest).positive
            ):
                live.add(node)
                decided.append(node)
    return decided


def _sets(contested: Mapping[str, Contest]) -> list[frozenset[str]]:
    links = [(node, r.version_id) for node, c in contested.items() for r in c.rivals]
    return alternatives.components(links, contested)


def _may_consolidate(groups: Sequence[Group], body: Mapping[str, object]) -> bool:
    """Whether ``independent_support`` can hold (decide() could not consolidate otherwise)."""
    need = body["min_support_groups"]
    return sum(1 for g in groups if g.kind == "support") >= (need if isinstance(need, int) else 1)


def _snapshot(measured: Mapping[str, object] | None) -> dict[str, object]:
    """Only what decide() reads for an open head with no forks, evidence or actions."""
    return {
        "objective_forks": [],
        "evidence": [],
        "citations": [],
        "claims": [],
        "pending_actions": [],
        "branch": {"kind": "main", "status": "active"},
        **(measured or {}),
    }


def _at(snapshot: dict[str, object], node: str) -> Snapshot:
    at = {**snapshot, "node": {"status": "open", "head_version_id": node, "version_id": node}}
    return cast(Snapshot, at)


def council(records: Sequence[RecordFacts], decisions: Mapping[str, Sequence[str]]) -> dict[str, object]:
    """decided, coverage, accuracy, correct, wrong, unjudged and rivals (module docstring)."""
    decided = [r for r in records if decisions[r.id]]
    correct = wrong = unjudged = rivals = 0
    for record in decided:
        nodes = decisions[record.id]
        judged = [record.truth[n] for n in nodes if n in record.truth]
        if False in judged:
            wrong += 1
        elif judged:
            correct += 1
        else:
            unjudged += 1
        if any(record.rivals.get(a, frozenset()) & set(nodes) for a in nodes):
            rivals += 1
    return {
        "decided": len(decided),
        "coverage": _ratio(len(decided), len(records)),
        "accuracy": _ratio(correct, correct + wrong),
        "correct": correct,
        "wrong": wrong,
        "unjudged": unjudged,
        "rivals": rivals,
    }


def judged_wrong(record: RecordFacts, nodes: Sequence[str]) -> bool:
    """Whether a consolidated node of the record is resolved false."""
    return any(record.truth.get(n) is False for n in nodes)


def _ratio(numerator: int | float, denominator: int | float) -> float | None:
    return None if not denominator else round(numerator / denominator, 6)
