"""Consolidation rules (docs/architecture.md §4): a pure function of the snapshot.

No clock, no randomness, no database: the rule set and grouping parameters
are part of the snapshot, so a decision can be recomputed from stored records
alone (invariant 9).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypedDict

from council.domain import alternatives, quorum
from council.domain.alternatives import Contest
from council.domain.effective import group_n_eff
from council.domain.independence import Group, GroupingParams, RunFacts, group_runs
from council.domain.snapshot import Snapshot, support_evidence
from council.domain.snapshot_shapes import NodeRetraction

CONSOLIDATE = "consolidate"
NOT_READY = "not_ready"


class ReasonDict(TypedDict):
    """A reason as stored with a decision (JSON)."""

    rule: str
    ok: bool
    detail: str


class GroupDict(TypedDict):
    """An independence group as stored with a decision (JSON)."""

    id: str
    kind: str
    runs: list[str]
    providers: list[str]
    max_confidence: float
    component_runs: list[str]


class DecisionDict(TypedDict):
    """A decision as stored with a consolidation (JSON)."""

    outcome: str
    reasons: list[ReasonDict]
    groups: list[GroupDict]


@dataclass(frozen=True)
class Reason:
    rule: str
    ok: bool
    detail: str

    def as_dict(self) -> ReasonDict:
        return {"rule": self.rule, "ok": self.ok, "detail": self.detail}


@dataclass(frozen=True)
class Decision:
    outcome: str
    reasons: tuple[Reason, ...]
    groups: tuple[Group, ...]

    @property
    def positive(self) -> bool:
        return self.outcome == CONSOLIDATE

    def failed(self) -> list[Reason]:
        return [r for r in self.reasons if not r.ok]

    def as_dict(self) -> DecisionDict:
        return {
            "outcome": self.outcome,
            "reasons": [r.as_dict() for r in self.reasons],
            "groups": [group_dict(g) for g in self.groups],
        }


def group_dict(group: Group) -> GroupDict:
    return {
        "id": group.id,
        "kind": group.kind,
        "runs": list(group.runs),
        "providers": list(group.providers),
        "max_confidence": group.max_confidence,
        "component_runs": list(group.component_runs),
    }


def run_facts(snapshot: Snapshot) -> list[RunFacts]:
    """One RunFacts per run that claimed on the node version."""
    return list(
        alternatives.facts_of(
            snapshot["claims"], snapshot["runs"], snapshot["exposures"], snapshot["citations"]
        )
    )


def groups_of(snapshot: Snapshot) -> list[Group]:
    return group_runs(run_facts(snapshot), GroupingParams.from_record(snapshot["grouping"]["params"]))


def groups_with_rivals(snapshot: Snapshot) -> tuple[list[Group], frozenset[str]]:
    """The node's groups as ``decide`` counts them, and the runs whose dispute is derived:
    under ``exclusive_alternatives``, its rivals' supporters as disputes; else its own."""
    if not snapshot["rule_set"]["body"].get("exclusive_alternatives"):
        return groups_of(snapshot), frozenset()
    mine, rivals = alternatives.members_of(snapshot)
    params = GroupingParams.from_record(snapshot["grouping"]["params"])
    contest = alternatives.contest(mine, rivals, params)
    return list(contest.groups), frozenset(contest.derived)


def distinct_provider_groups(groups: list[Group]) -> int:
    """Largest number of groups that can each be credited to a different provider
    (bipartite matching, so one provider never counts twice)."""
    owner: dict[str, int] = {}

    def assign(index: int, seen: set[str]) -> bool:
        for provider in groups[index].providers:
            if provider in seen:
                continue
            seen.add(provider)
            if provider not in owner or assign(owner[provider], seen):
                owner[provider] = index
                return True
        return False

    return sum(1 for index in range(len(groups)) if assign(index, set()))


def evaluate(snapshot: Snapshot) -> Decision:
    """Apply the snapshot's pinned rule set to it."""
    return decide(snapshot, snapshot["rule_set"]["body"], groups_of(snapshot))


def decide(
    snapshot: Snapshot, rules: Mapping[str, Any], groups: list[Group], contest: Contest | None = None
) -> Decision:
    """Apply the rule-set body ``rules`` to a snapshot whose groups are already
    known (a counterfactual decides one snapshot under two rule sets, and the
    grouping does not depend on the rules). Under ``exclusive_alternatives`` the
    groups are the node's with its rivals' endorsements counted as disputes:
    ``contest`` when the caller measured it (council eval), else from the snapshot."""
    node = snapshot["node"]
    if rules.get("exclusive_alternatives"):
        if contest is None:
            mine, rivals = alternatives.members_of(snapshot)
            params = GroupingParams.from_record(snapshot["grouping"]["params"])
            contest = alternatives.contest(mine, rivals, params)
        groups = list(contest.groups)
    else:
        contest = None
    support = [g for g in groups if g.kind == "support"]
    dispute = [g for g in groups if g.kind == "dispute"]
    reasons: list[Reason] = []

    is_head = node["head_version_id"] == node["version_id"]
    reasons.append(
        Reason(
            "node_is_open_head",
            node["status"] in ("open", "tentative") and is_head,
            f"status {node['status']}, "
            + ("head version" if is_head else f"head is {node['head_version_id']}"),
        )
    )
    if "retraction" in node:  # v2 snapshots: a retracted version needs a revision, a fork or a restore
        reasons.append(_not_retracted(node["retraction"]))
    need_groups = int(rules["min_support_groups"])
    reasons.append(
        Reason(
            "independent_support",
            len(support) >= need_groups,
            f"{len(support)} independent support group(s), {need_groups} required",
        )
    )
    need_providers = int(rules["min_support_providers"])
    credited = distinct_provider_groups(support)
    providers = sorted({p for g in support for p in g.providers})
    reasons.append(
        Reason(
            "provider_diversity",
            credited >= need_providers,
            f"{credited} support group(s) from distinct providers ({', '.join(providers) or 'none'}), "
            f"{need_providers} required",
        )
    )
    if rules.get("min_effective_support") is not None:
        reasons.append(_effective_support(snapshot, support, float(rules["min_effective_support"])))
    if rules.get("min_council_answered") is not None:
        need = float(rules["min_council_answered"])
        seats = quorum.quorum(snapshot.get("council", []))
        reasons.append(Reason("council_answered", quorum.met(seats, need), quorum.describe(seats, need)))
    bar = Decimal(str(rules["dispute_confidence_bar"]))
    strong = [g for g in dispute if Decimal(str(g.max_confidence)) > bar]
    derived = (
        "" if contest is None else f"; {len(contest.derived)} run(s) endorsing a rival counted as disputing"
    )
    reasons.append(
        Reason(
            "no_strong_dispute",
            not strong,
            f"{len(strong)} independent dispute group(s) above confidence {bar} "
            f"({len(dispute)} in all{derived})",
        )
    )
    if contest is not None:
        reasons.extend(_rival_reasons(snapshot, rules, support, contest))
    if rules.get("block_on_open_objective_fork", True):
        open_forks = [b["id"] for b in snapshot["objective_forks"] if b["status"] == "active"]
        reasons.append(
            Reason(
                "no_open_objective_fork",
                not open_forks,
                f"{len(open_forks)} unresolved objective fork(s)"
                + (f": {', '.join(open_forks)}" if open_forks else ""),
            )
        )
    if rules.get("block_on_unsound_support_evidence", True):
        validity = {e["id"]: e["validity"] for e in snapshot["evidence"]}
        unsound = [e for e in support_evidence(snapshot) if validity.get(e) in ("challenged", "invalidated")]
        reasons.append(
            Reason(
                "support_evidence_sound",
                not unsound,
                f"{len(unsound)} cited support evidence item(s) challenged or invalidated"
                + (f": {', '.join(unsound)}" if unsound else ""),
            )
        )
    if rules.get("block_on_unmet_pending_actions", True):
        open_actions = [p["id"] for p in snapshot["pending_actions"] if p["status"] == "open"]
        reasons.append(
            Reason(
                "pending_actions_met",
                not open_actions,
                f"{len(open_actions)} open pending action(s) with unmet acceptance condition",
            )
        )
    if rules.get("require_mainline_or_merged", True):
        branch = snapshot["branch"]
        reasons.append(
            Reason(
                "mainline_or_merged",
                branch["kind"] == "main" or branch["status"] == "merged",
                f"branch {branch['kind']} ({branch['status']})",
            )
        )
    outcome = CONSOLIDATE if all(r.ok for r in reasons) else NOT_READY
    return Decision(outcome, tuple(reasons), tuple(groups))


def _rival_reasons(
    snapshot: Snapshot, rules: Mapping[str, object], support: list[Group], contest: Contest
) -> list[Reason]:
    """Under exclusive_alternatives: the node's support beats every rival's in contest by
    ``min_rival_margin``, and no rival holds a live consolidation (docs/architecture.md §4)."""
    given = rules.get("min_rival_margin", 0)
    margin = float(given) if isinstance(given, int | float) else 0.0
    effective = rules.get("min_effective_support") is not None
    models = alternatives.snapshot_models(snapshot) if effective else None
    table = snapshot.get("correlations", [])
    unit = "n_eff" if effective else "independent support group(s)"
    mine = alternatives.support(support, models, table)
    measured = [
        (alternatives.support(r.groups, models, table), r.version_id) for r in contest.rivals if r.in_contest
    ]
    if measured:
        theirs, strongest = max(measured)
        beats = round(mine - theirs, 6) >= margin
        detail = (
            f"{mine:.2f} {unit} against {theirs:.2f} of the strongest of {len(measured)} rival(s) "
            f"({alternatives.short(strongest)}), a margin of {margin:g} required"
        )
    else:
        beats, detail = True, "no rival alternative in contest"
    live = [
        f"{alternatives.short(r.version_id)} holds live consolidation {r.live}"
        for r in contest.rivals
        if r.live
    ]
    held = "rival " + ", ".join(live) if live else "no rival holds a live consolidation"
    return [Reason("rival_margin", beats, detail), Reason("no_live_rival", not live, held)]


def _effective_support(snapshot: Snapshot, support: list[Group], need: float) -> Reason:
    value = _n_eff(snapshot, support)
    return Reason(
        "effective_support",
        value >= need,
        f"n_eff {value:.2f} over {len(support)} independent support group(s), {need:g} required",
    )


def _n_eff(snapshot: Snapshot, support: list[Group]) -> float:
    """Kish's n_eff over the support groups, with the correlation table the snapshot
    carries (council/domain/effective.py); a run's model is its ``model`` (else its agent)."""
    model = {r["id"]: r.get("model") or r["agent"] for r in snapshot["runs"]}
    return group_n_eff([[model[run] for run in g.runs] for g in support], snapshot.get("correlations", []))


def support_n_eff(snapshot: Snapshot, groups: Iterable[Group]) -> float | None:
    """The n_eff shown beside the group count: from the correlation table a v3 snapshot
    carries (a rule set with min_effective_support measures one); None without a table."""
    if "correlations" not in snapshot:
        return None
    return _n_eff(snapshot, [g for g in groups if g.kind == "support"])


_N_EFF = re.compile(r"^n_eff (\d+\.\d+) over ")


def recorded_n_eff(reasons: Iterable[Mapping[str, object]]) -> float | None:
    """The n_eff a stored decision's ``effective_support`` reason states (two decimals), if any."""
    for reason in reasons:
        if reason.get("rule") == "effective_support":
            found = _N_EFF.match(str(reason.get("detail", "")))
            return float(found.group(1)) if found else None
    return None


def _not_retracted(retraction: NodeRetraction) -> Reason:
    """A version whose consolidation was retracted does not consolidate again on
    new claims alone: that takes a new version (a revision or a fork) or an
    explicit restore through adjudication (docs/architecture.md §5)."""
    status = retraction["status"]
    if status == "retracted":
        detail = (
            f"consolidation {retraction['consolidation_id']} of this version was retracted; "
            "a revision, a fork or a restore through adjudication is needed"
        )
    elif status == "live":
        detail = f"consolidation {retraction['consolidation_id']} was restored through adjudication"
    else:
        detail = "never retracted"
    return Reason("version_not_retracted", status != "retracted", detail)


def adjudication(*, retract_groups: int, keep_groups: int, required: int, superseded: bool) -> str:
    """The outcome of a retraction proposal from its independent vote groups
    (endorse = retract, dispute = keep): retracted or restored when that side has
    at least ``required`` groups and more than the other; superseded when a newer
    consolidation replaced the one under review; otherwise still pending."""
    if superseded:
        return "superseded"
    if retract_groups >= required and retract_groups > keep_groups:
        return "retracted"
    if keep_groups >= required and keep_groups > retract_groups:
        return "restored"
    return "pending"
