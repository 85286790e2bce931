"""Materiality (docs/architecture.md §5): would the decision flip without the evidence that fell?

Pure: the stored snapshot with every currently invalidated evidence item
removed — and with the claims whose cited support rested only on removed
evidence no longer counting as support — is evaluated again under its pinned
rules. Material means the positive decision does not survive.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

from council.domain.rules import Decision, evaluate
from council.domain.snapshot import Snapshot


def without_evidence(snapshot: Snapshot, removed: Iterable[str]) -> Snapshot:
    gone = {str(e) for e in removed}
    stripped = copy.deepcopy(snapshot)
    support_by_run: dict[str, set[str]] = {}
    for citation in snapshot["citations"]:
        if citation["run_id"] is not None and citation["role"] == "supports":
            support_by_run.setdefault(citation["run_id"], set()).add(citation["evidence_id"])
    fallen_runs = {run for run, cited in support_by_run.items() if cited and cited <= gone}
    stripped["evidence"] = [e for e in snapshot["evidence"] if e["id"] not in gone]
    stripped["citations"] = [c for c in snapshot["citations"] if c["evidence_id"] not in gone]
    stripped["claims"] = [
        c
        for c in snapshot["claims"]
        if not (c["type"] in ("originate", "endorse") and c["run_id"] in fallen_runs)
    ]
    return stripped


def check(snapshot: Snapshot, removed: Iterable[str]) -> tuple[bool, Decision]:
    """(material, the decision without the removed evidence)."""
    after = evaluate(without_evidence(snapshot, removed))
    return (not after.positive), after
