"""The consolidation snapshot: everything a decision depends on, canonical and hashed.

A snapshot is built from the rows a *manifest* names (see
``council/sql/snapshot.sql``). The manifest is chosen in one statement; the
named rows are immutable, so the same manifest always yields the same
snapshot. Replay extracts the manifest back out of a stored snapshot, re-reads
exactly those rows and rebuilds — no timestamps involved (docs/architecture.md §4).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict, TypeVar

from council.domain.canonical import canonical_json, canonical_sha256, sha256_text
from council.domain.effective import PairCorrelation
from council.domain.jsonvalue import JsonValue
from council.domain.manifests import Manifest
from council.domain.quorum import Seat

FORMAT = "council-snapshot-v1"
# v2 adds node.retraction: the latest retraction (or restore) of a consolidation of
# the version. Snapshots whose manifest names none rebuild as v1, hash unchanged.
FORMAT_V2 = "council-snapshot-v2"
# v3 adds what the decision measured when it was made, for a rule set that reads it:
# ``correlations`` (the error-correlation table of the models that claimed, under
# min_effective_support) and ``council`` (the runs the node's council sent and their
# status, under min_council_answered); its runs carry their ``model``. The manifest
# holds both as canonical JSON, so replay rebuilds them as they were: a later table,
# or a run that finished later, never changes a past decision.
FORMAT_V3 = "council-snapshot-v3"


class NodeRetraction(TypedDict):
    transition_id: str | None
    consolidation_id: str | None
    status: str | None


class SnapshotNode(TypedDict):
    version_id: str
    logical_node_id: str
    thread_id: str
    version_no: int
    content_sha256: str
    status: str
    status_transition_id: str | None
    head_version_id: str
    version_ids: list[str]
    retraction: NotRequired[NodeRetraction]  # format v2 only


class SnapshotBranch(TypedDict):
    id: str
    kind: str
    status: str
    transition_id: str | None


class SnapshotClaim(TypedDict):
    id: str
    run_id: str
    type: str
    confidence: str  # numeric, as Postgres prints it


class SnapshotRun(TypedDict):
    id: str
    agent: str
    provider: str
    simulated: bool
    parent_run_id: str | None
    input_features: list[str]
    model: NotRequired[str]  # read by the effective-support rule (else the agent)


class SnapshotExposure(TypedDict):
    id: str
    run_id: str
    exposed_to_run_id: str | None
    channel: str


class SnapshotCitation(TypedDict):
    id: str
    run_id: str | None
    claim_id: str | None
    evidence_id: str
    role: str


class SnapshotEvidence(TypedDict):
    id: str
    sha256: str
    validity: str
    transition_id: str | None


class SnapshotAction(TypedDict):
    id: str
    status: str
    transition_id: str | None


class SnapshotRuleSet(TypedDict):
    id: str
    sha256: str
    body: dict[str, JsonValue]


class SnapshotGrouping(TypedDict):
    id: str
    sha256: str
    params: dict[str, JsonValue]


class Snapshot(TypedDict):
    """What a decision depends on, as stored (``consolidations.snapshot``) and hashed."""

    format: str
    node: SnapshotNode
    branch: SnapshotBranch
    objective_forks: list[SnapshotBranch]
    claims: list[SnapshotClaim]
    runs: list[SnapshotRun]
    exposures: list[SnapshotExposure]
    citations: list[SnapshotCitation]
    evidence: list[SnapshotEvidence]
    pending_actions: list[SnapshotAction]
    rule_set: SnapshotRuleSet
    grouping: SnapshotGrouping
    # Read by the rules min_council_answered and min_effective_support when present.
    council: NotRequired[list[Seat]]
    correlations: NotRequired[list[PairCorrelation]]


_Row = TypeVar("_Row", bound=Mapping[str, object])


def _by_id(items: list[_Row]) -> list[_Row]:
    return sorted(items, key=lambda item: str(item["id"]))


def _s(value: object) -> str | None:
    return None if value is None else str(value)


def build_snapshot(rows: Mapping[str, Any]) -> Snapshot:
    """Canonical snapshot from the rows of ``snapshot_rows`` (pure)."""
    version = rows["version"]
    if version is None:
        raise ValueError("the manifest names no node version")
    versions = rows["versions"] or []
    head = max(versions, key=lambda v: int(v["version_no"])) if versions else version
    node_transition = rows.get("node_transition")
    branches: dict[str, SnapshotBranch] = {
        str(b["id"]): {
            "id": str(b["id"]),
            "kind": b["kind"],
            "status": b["to_status"] or "active",
            "transition_id": _s(b["transition"]),
        }
        for b in rows["branches"] or []
    }
    node_branch = branches[str(version["branch_id"])]
    node: SnapshotNode = {
        "version_id": str(version["id"]),
        "logical_node_id": str(version["logical_node_id"]),
        "thread_id": str(version["thread_id"]),
        "version_no": int(version["version_no"]),
        "content_sha256": version["content_sha256"],
        "status": node_transition["to_status"] if node_transition else version["initial_status"],
        "status_transition_id": _s(node_transition["id"]) if node_transition else None,
        "head_version_id": str(head["id"]),
        "version_ids": sorted(str(v["id"]) for v in versions),
    }
    retraction = rows.get("retraction")
    if retraction is not None:
        node["retraction"] = {
            "transition_id": _s(retraction.get("id")),
            "consolidation_id": _s(retraction.get("consolidation_id")),
            "status": retraction.get("to_status"),
        }
    measured = {key: rows[key] for key in ("correlations", "council") if rows.get(key) is not None}
    snapshot: Snapshot = {
        "format": FORMAT_V3 if measured else FORMAT if retraction is None else FORMAT_V2,
        "node": node,
        "branch": node_branch,
        "objective_forks": _by_id([b for b in branches.values() if b["kind"] == "objective"]),
        "claims": _by_id(
            [
                {
                    "id": str(c["id"]),
                    "run_id": str(c["run_id"]),
                    "type": c["type"],
                    "confidence": c["confidence"],
                }
                for c in rows["claims"] or []
            ]
        ),
        "runs": _by_id([_run(r, with_model=bool(measured)) for r in rows["runs"] or []]),
        "exposures": _by_id(
            [
                {
                    "id": str(e["id"]),
                    "run_id": str(e["run_id"]),
                    "exposed_to_run_id": _s(e["exposed_to_run_id"]),
                    "channel": e["channel"],
                }
                for e in rows["exposures"] or []
            ]
        ),
        "citations": _by_id(
            [
                {
                    "id": str(c["id"]),
                    "run_id": _s(c["run_id"]),
                    "claim_id": _s(c["claim_id"]),
                    "evidence_id": str(c["evidence_id"]),
                    "role": c["role"],
                }
                for c in rows["citations"] or []
            ]
        ),
        "evidence": _by_id(
            [
                {
                    "id": str(e["id"]),
                    "sha256": e["sha256"],
                    "validity": e["to_status"] or "valid",
                    "transition_id": _s(e["transition"]),
                }
                for e in rows["evidence"] or []
            ]
        ),
        "pending_actions": _by_id(
            [
                {"id": str(p["id"]), "status": p["to_status"] or "open", "transition_id": _s(p["transition"])}
                for p in rows["pending_actions"] or []
            ]
        ),
        "rule_set": {
            "id": rows["rule_set"]["id"],
            "sha256": rows["rule_set"]["sha256"],
            "body": rows["rule_set"]["body"],
        },
        "grouping": {
            "id": rows["grouping"]["id"],
            "sha256": rows["grouping"]["sha256"],
            "params": rows["grouping"]["params"],
        },
    }
    if "correlations" in measured:
        snapshot["correlations"] = measured["correlations"]
    if "council" in measured:
        snapshot["council"] = measured["council"]
    return snapshot


def measured_rows(named: Manifest) -> dict[str, object]:
    """What a v3 manifest measured, as the rows ``build_snapshot`` reads (none for v1/v2)."""
    fields: Mapping[str, object] = named
    return {
        key: json.loads(str(fields[key]))
        for key in ("correlations", "council")
        if fields.get(key) is not None
    }


def _run(r: Mapping[str, object], *, with_model: bool) -> SnapshotRun:
    fingerprint = r["input_fingerprint"]
    run: SnapshotRun = {
        "id": str(r["id"]),
        "agent": str(r["agent"]),
        "provider": str(r["provider"]),
        "simulated": bool(r["simulated"]),
        "parent_run_id": _s(r["parent_run_id"]),
        "input_features": sorted({str(f) for f in fingerprint} if isinstance(fingerprint, list) else set()),
    }
    if with_model:  # v3: the effective-support rule reads each run's model
        run["model"] = str(r["model"])
    return run


def snapshot_hash(snapshot: Snapshot) -> str:
    return canonical_sha256(snapshot)


def snapshot_digests(snapshot: Snapshot) -> tuple[str, dict[str, str]]:
    """The snapshot's hash and the SHA-256 of each of its top-level sections,
    from one serialisation. A not-ready evaluation stores the section hashes
    beside its manifest instead of the whole snapshot, so that replay can still
    say which part of a rebuilt snapshot differs."""
    parts = {key: canonical_json(value) for key, value in snapshot.items()}
    whole = "{" + ",".join(f"{canonical_json(key)}:{parts[key]}" for key in sorted(parts)) + "}"
    return sha256_text(whole), {key: sha256_text(text) for key, text in parts.items()}


def manifest_of(snapshot: Snapshot) -> Manifest:
    """The manifest a stored snapshot was built from: the ids of every row it used."""
    node = snapshot["node"]
    branches = [snapshot["branch"], *snapshot["objective_forks"]]
    unique_branches = {b["id"]: b for b in branches}
    manifest: Manifest = {
        "version_id": node["version_id"],
        "thread_id": node["thread_id"],
        "versions": node["version_ids"],
        "node_transition": node["status_transition_id"],
        "branches": [{"id": b["id"], "transition": b["transition_id"]} for b in unique_branches.values()],
        "claims": [c["id"] for c in snapshot["claims"]],
        "runs": [r["id"] for r in snapshot["runs"]],
        "exposures": [e["id"] for e in snapshot["exposures"]],
        "citations": [c["id"] for c in snapshot["citations"]],
        "evidence": [{"id": e["id"], "transition": e["transition_id"]} for e in snapshot["evidence"]],
        "pending_actions": [
            {"id": p["id"], "transition": p["transition_id"]} for p in snapshot["pending_actions"]
        ],
        "rule_set_id": snapshot["rule_set"]["id"],
        "grouping_algorithm_id": snapshot["grouping"]["id"],
    }
    if "retraction" in node:
        manifest["retraction"] = node["retraction"]["transition_id"]
    if "correlations" in snapshot:
        manifest["correlations"] = canonical_json(snapshot["correlations"])
    if "council" in snapshot:
        manifest["council"] = canonical_json(snapshot["council"])
    return manifest


def support_evidence(snapshot: Snapshot) -> list[str]:
    """Evidence the consolidation rests on: cited in support by the node's
    author or by a supporting run (the evidence index written at commit)."""
    supporters = {c["run_id"] for c in snapshot["claims"] if c["type"] in ("originate", "endorse")}
    return sorted(
        {
            c["evidence_id"]
            for c in snapshot["citations"]
            if c["role"] == "supports" and (c["run_id"] is None or c["run_id"] in supporters)
        }
    )
