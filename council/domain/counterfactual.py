"""Counterfactual replay (docs/architecture.md §12): every stored decision,
decided again under another rule set.

A stored decision is rebuilt from the rows it names (the same canonical
snapshot its hash was taken over); the pure evaluation of ``rules.py`` then
decides it twice — under the rule set it was pinned to (which must give the
stored outcome: invariant 9) and under the candidate. Nothing here reads a
clock or a database; the caller brings the snapshots.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from council.domain.canonical import canonical_sha256
from council.domain.rules import Decision, decide, groups_of
from council.domain.snapshot import Snapshot, snapshot_hash
from council.errors import BadInput

# The keys of a stored rule set's body (``rule_sets.body``), with their kind.
_COUNTS = {"min_support_groups": 1, "min_support_providers": 0, "retraction_min_endorse_groups": 1}
_SWITCHES = (
    "block_on_open_objective_fork",
    "block_on_unsound_support_evidence",
    "block_on_unmet_pending_actions",
    "require_mainline_or_merged",
)
_REQUIRED = ("min_support_groups", "min_support_providers", "dispute_confidence_bar")
_RULE_SET_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")
MAX_DESCRIPTION = 2000


@dataclass(frozen=True)
class RuleSet:
    """A rule set as stored (``rule_sets``): its versioned name, body and digest."""

    id: str
    body: dict[str, object]
    description: str = ""

    @property
    def sha256(self) -> str:
        return rule_set_sha256(self.id, self.body)

    def section(self) -> dict[str, object]:
        """The rule set as a snapshot names it."""
        return {"id": self.id, "sha256": self.sha256, "body": self.body}


def rule_set_sha256(rule_set_id: str, body: dict[str, object]) -> str:
    """The digest stored as ``rule_sets.body_sha256`` (the seed migration's too)."""
    return canonical_sha256({"id": rule_set_id, "body": body})


def parse_rule_set(document: object) -> RuleSet:
    """A rule-set file (docs/guide/learning.md): ``{"id", "description", "body"}``, its body
    holding the keys of a stored rule set. Anything else is bad input."""
    if not isinstance(document, dict):
        raise BadInput("a rule-set file is a JSON object with id, description and body")
    unknown = sorted(set(document) - {"id", "description", "body"})
    if unknown:
        raise BadInput(f"unknown key(s) in the rule-set file: {', '.join(unknown)}")
    rule_set_id = document.get("id")
    if not isinstance(rule_set_id, str) or not _RULE_SET_ID.match(rule_set_id):
        raise BadInput("the rule set's id must be 1-100 of a-z, 0-9, '.', '_', '-' (e.g. council-strict-v1)")
    description = document.get("description", "")
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        raise BadInput(f"the rule set's description must be text of at most {MAX_DESCRIPTION} characters")
    return RuleSet(rule_set_id, parse_body(document.get("body")), description)


def parse_body(body: object) -> dict[str, object]:
    if not isinstance(body, dict):
        raise BadInput("the rule set's body must be a JSON object")
    known = (
        set(_COUNTS) | set(_SWITCHES) | {"dispute_confidence_bar"} | set(_INDEPENDENCE) | set(_ALTERNATIVES)
    )
    unknown = sorted(set(body) - known)
    if unknown:
        raise BadInput(f"unknown rule(s) in the body: {', '.join(unknown)}")
    missing = [key for key in _REQUIRED if key not in body]
    if missing:
        raise BadInput(f"the body lacks {', '.join(missing)}")
    for key, least in _COUNTS.items():
        value = body.get(key, least)
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= 100:
            raise BadInput(f"{key} must be a whole number from {least} to 100")
    for key in _SWITCHES:
        if not isinstance(body.get(key, True), bool):
            raise BadInput(f"{key} must be true or false")
    bar = body["dispute_confidence_bar"]
    if isinstance(bar, bool) or not isinstance(bar, int | float) or not 0 <= bar <= 1:
        raise BadInput("dispute_confidence_bar must be a number from 0 to 1")
    _check_independence(body)
    check_alternatives(body)
    return dict(body)


# The rule-set keys of effective independence and the quorum (docs/architecture.md §4).
_INDEPENDENCE = (
    "min_effective_support",
    "error_correlation_prior",
    "correlation_min_resolved",
    "min_council_answered",
)


def _number(value: object, low: float, high: float) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and low <= value <= high


def _check_independence(body: Mapping[str, object]) -> None:
    if "min_effective_support" in body:
        if not _number(body["min_effective_support"], 0, 100):
            raise BadInput("min_effective_support must be a number from 0 to 100")
        for key in ("error_correlation_prior", "correlation_min_resolved"):
            if key not in body:
                raise BadInput(f"min_effective_support needs {key} in the body")
    prior = body.get("error_correlation_prior", {"same_family": 0, "other": 0})
    if (
        not isinstance(prior, dict)
        or set(prior) != {"same_family", "other"}
        or not all(_number(v, 0, 1) for v in prior.values())
    ):
        raise BadInput('error_correlation_prior must be {"same_family": x, "other": y}, each from 0 to 1')
    least = body.get("correlation_min_resolved", 1)
    if isinstance(least, bool) or not isinstance(least, int) or not 1 <= least <= 100000:
        raise BadInput("correlation_min_resolved must be a whole number from 1 to 100000")
    if "min_council_answered" in body and not _number(body["min_council_answered"], 0, 1):
        raise BadInput("min_council_answered must be a share from 0 to 1")


# The rule-set keys of exclusive alternatives (docs/architecture.md §4, council-default-v3).
_ALTERNATIVES = ("exclusive_alternatives", "min_rival_margin")


def check_alternatives(body: Mapping[str, object]) -> None:
    """``exclusive_alternatives`` is true or false; ``min_rival_margin`` a number from 0 to
    100, only beside ``exclusive_alternatives`` true (a margin between rivals means nothing
    when rivals may both consolidate). Checked for a rule-set file and a stored rule set alike."""
    exclusive = body.get("exclusive_alternatives", False)
    if not isinstance(exclusive, bool):
        raise BadInput("exclusive_alternatives must be true or false")
    if "min_rival_margin" in body:
        if not exclusive:
            raise BadInput("min_rival_margin needs exclusive_alternatives true in the body")
        if not _number(body["min_rival_margin"], 0, 100):
            raise BadInput("min_rival_margin must be a number from 0 to 100")


@dataclass(frozen=True)
class StoredDecision:
    """What the ledger recorded for one decision (no reasons: they are re-derived)."""

    id: str
    kind: str  # consolidation | evaluation
    node_version_id: str
    outcome: str  # consolidate | not_ready
    snapshot_sha256: str


@dataclass(frozen=True)
class Redecided:
    """One stored decision decided again: under its pinned rules and the candidate."""

    stored: StoredDecision
    hash_match: bool
    pinned: Decision
    candidate: Decision

    @property
    def reproduced(self) -> bool:
        """The rebuilt snapshot hashes to the stored digest and its pinned rules
        give the stored outcome."""
        return self.hash_match and self.pinned.outcome == self.stored.outcome

    @property
    def changed(self) -> bool:
        return self.candidate.outcome != self.stored.outcome

    def rules_changed(self) -> list[str]:
        """The rules whose verdict differs between the two decisions (a rule only
        one of them applies counts as changed when it fails there)."""
        before = {r.rule: r.ok for r in self.pinned.reasons}
        after = {r.rule: r.ok for r in self.candidate.reasons}
        return sorted(r for r in before.keys() | after.keys() if before.get(r, True) != after.get(r, True))


def redecide(stored: StoredDecision, snapshot: Snapshot, candidate: RuleSet) -> Redecided:
    """Decide a rebuilt snapshot under its pinned rule set and under ``candidate``
    (grouping once: it depends on the pinned grouping version, not on the rules)."""
    groups = groups_of(snapshot)
    pinned = decide(snapshot, snapshot["rule_set"]["body"], groups)
    other = (
        pinned if candidate.body == snapshot["rule_set"]["body"] else decide(snapshot, candidate.body, groups)
    )
    return Redecided(stored, snapshot_hash(snapshot) == stored.snapshot_sha256, pinned, other)
