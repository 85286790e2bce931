"""The rule evaluation is a pure function of the snapshot (no database here)."""

from __future__ import annotations

import copy
from typing import Any

from council.domain.canonical import canonical_sha256
from council.domain.independence import Group
from council.domain.rules import distinct_provider_groups, evaluate
from council.domain.snapshot import manifest_of, snapshot_digests, snapshot_hash, support_evidence

RULES = {
    "min_support_groups": 2,
    "min_support_providers": 2,
    "dispute_confidence_bar": 0.6,
    "block_on_open_objective_fork": True,
    "block_on_unsound_support_evidence": True,
    "block_on_unmet_pending_actions": True,
    "require_mainline_or_merged": True,
}
PARAMS = {
    "link_parent": True,
    "link_exposure": True,
    "input_jaccard": 0.8,
    "evidence_jaccard": 0.5,
    "evidence_min_shared": 2,
}


def _snapshot(
    claims: list[tuple[str, str, str, str]], cites: dict[str, list[str]] | None = None
) -> dict[str, Any]:
    """claims: (run id, provider, claim type, confidence)."""
    cites = cites or {}
    evidence = sorted({e for items in cites.values() for e in items})
    return {
        "format": "council-snapshot-v1",
        "node": {
            "version_id": "v1",
            "logical_node_id": "n1",
            "thread_id": "t1",
            "version_no": 1,
            "content_sha256": "0" * 64,
            "status": "open",
            "status_transition_id": None,
            "head_version_id": "v1",
            "version_ids": ["v1"],
        },
        "branch": {"id": "b-main", "kind": "main", "status": "active", "transition_id": None},
        "objective_forks": [],
        "claims": [{"id": f"c-{r}", "run_id": r, "type": k, "confidence": c} for r, _, k, c in claims],
        "runs": [
            {
                "id": r,
                "agent": p,
                "provider": p,
                "simulated": False,
                "parent_run_id": None,
                "input_features": [],
            }
            for r, p, _, _ in claims
        ],
        "exposures": [],
        "citations": [
            {"id": f"ci-{r}-{e}", "run_id": r, "claim_id": f"c-{r}", "evidence_id": e, "role": "supports"}
            for r, items in cites.items()
            for e in items
        ],
        "evidence": [
            {"id": e, "sha256": "1" * 64, "validity": "valid", "transition_id": None} for e in evidence
        ],
        "pending_actions": [],
        "rule_set": {"id": "council-default-v1", "sha256": "2" * 64, "body": RULES},
        "grouping": {"id": "indep-v1", "sha256": "3" * 64, "params": PARAMS},
    }


READY = [("r1", "anthropic", "endorse", "0.800"), ("r2", "openai", "endorse", "0.700")]


def test_two_independent_providers_consolidate() -> None:
    decision = evaluate(_snapshot(READY, {"r1": ["e1"], "r2": ["e2"]}))
    assert decision.positive and not decision.failed()


def test_evaluation_is_deterministic_and_does_not_touch_its_input() -> None:
    snapshot = _snapshot(READY, {"r1": ["e1"], "r2": ["e2"]})
    before = copy.deepcopy(snapshot)
    assert evaluate(snapshot).as_dict() == evaluate(snapshot).as_dict()
    assert snapshot == before and snapshot_hash(snapshot) == snapshot_hash(before)


def test_section_digests_come_from_the_same_serialisation_as_the_hash() -> None:
    snapshot = _snapshot(READY, {"r1": ["e1"], "r2": ["e2"]})
    whole, sections = snapshot_digests(snapshot)
    assert whole == snapshot_hash(snapshot)
    assert sections == {key: canonical_sha256(value) for key, value in snapshot.items()}
    changed = copy.deepcopy(snapshot)
    changed["claims"][0]["confidence"] = 0.11
    assert [k for k, v in snapshot_digests(changed)[1].items() if v != sections[k]] == ["claims"]


def test_shared_cited_evidence_makes_support_dependent() -> None:
    decision = evaluate(_snapshot(READY, {"r1": ["e1", "e2"], "r2": ["e1", "e2"]}))
    assert {r.rule for r in decision.failed()} == {"independent_support", "provider_diversity"}


def test_dispute_bar_is_strictly_above() -> None:
    at_bar = evaluate(_snapshot([*READY, ("r3", "zhipu", "dispute", "0.600")]))
    above = evaluate(_snapshot([*READY, ("r3", "zhipu", "dispute", "0.601")]))
    assert at_bar.positive and {r.rule for r in above.failed()} == {"no_strong_dispute"}


def test_invalidated_support_evidence_blocks() -> None:
    snapshot = _snapshot(READY, {"r1": ["e1"], "r2": ["e2"]})
    snapshot["evidence"][0]["validity"] = "invalidated"
    assert {r.rule for r in evaluate(snapshot).failed()} == {"support_evidence_sound"}
    assert support_evidence(snapshot) == ["e1", "e2"]


def test_provider_matching_never_counts_a_provider_twice() -> None:
    def g(*providers: str) -> Group:
        return Group("g", "support", ("r",), tuple(providers), 0.5, ("r",))

    assert distinct_provider_groups([g("anthropic"), g("anthropic")]) == 1
    assert distinct_provider_groups([g("anthropic", "openai"), g("anthropic")]) == 2
    assert distinct_provider_groups([g("a"), g("a", "b"), g("b", "c")]) == 3


def test_manifest_names_every_row_used() -> None:
    snapshot = _snapshot(READY, {"r1": ["e1"], "r2": ["e2"]})
    named = manifest_of(snapshot)
    assert named["claims"] == ["c-r1", "c-r2"] and named["runs"] == ["r1", "r2"]
    assert [e["id"] for e in named["evidence"]] == ["e1", "e2"]
    assert named["rule_set_id"] == "council-default-v1" and named["grouping_algorithm_id"] == "indep-v1"
