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
from typing import Any, TypeVar

from council.domain.canonical import canonical_json, canonical_sha256, sha256_text
from council.domain.manifests import Manifest
from council.domain.snapshot_shapes import (
    RivalIds,
    SnapshotBranch,
    SnapshotCitation,
    SnapshotClaim,
    SnapshotConsolidation,
    SnapshotExposure,
    SnapshotNode,
    SnapshotRival,
    SnapshotRun,
)
from council.domain.snapshot_shapes import Snapshot as Snapshot  # re-exported: the shape every reader names

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
# v4 adds ``rivals``, under a rule set with exclusive_alternatives: each other alternative
# of the node's set (docs/architecture.md §4) as it stood — its head version and status,
# the claims on it with their runs, exposures and citations, and its node's live
# consolidation — read after the locks in the one manifest statement. The manifest names
# those rows (``rivals``, canonical JSON of their ids), so replay re-reads exactly them.
FORMAT_V4 = "council-snapshot-v4"


_Row = TypeVar("_Row", bound=Mapping[str, object])


def _by_id(items: list[_Row]) -> list[_Row]:
    return sorted(items, key=lambda item: str(item["id"]))


def _s(value: object) -> str | None:
    return None if value is None else str(value)


_Rows = Mapping[str, Any]  # the rows snapshot_rows (or snapshot_rival_rows) read, as JSON


def build_snapshot(rows: _Rows) -> Snapshot:
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
    rivals = rows.get("rivals")
    if rivals is not None:
        fmt = FORMAT_V4
    else:
        fmt = FORMAT_V3 if measured else FORMAT if retraction is None else FORMAT_V2
    snapshot: Snapshot = {
        "format": fmt,
        "node": node,
        "branch": node_branch,
        "objective_forks": _by_id([b for b in branches.values() if b["kind"] == "objective"]),
        "claims": _claims(rows),
        "runs": _by_id([_run(r, with_model=bool(measured)) for r in rows["runs"] or []]),
        "exposures": _exposures(rows),
        "citations": _citations(rows),
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
    if rivals is not None:
        snapshot["rivals"] = sorted((_rival(r) for r in rivals), key=lambda r: r["logical_node_id"])
    return snapshot


def _claims(rows: _Rows) -> list[SnapshotClaim]:
    return _by_id(
        [
            {"id": str(c["id"]), "run_id": str(c["run_id"]), "type": c["type"], "confidence": c["confidence"]}
            for c in rows["claims"] or []
        ]
    )


def _exposures(rows: _Rows) -> list[SnapshotExposure]:
    return _by_id(
        [
            {
                "id": str(e["id"]),
                "run_id": str(e["run_id"]),
                "exposed_to_run_id": _s(e["exposed_to_run_id"]),
                "channel": e["channel"],
            }
            for e in rows["exposures"] or []
        ]
    )


def _citations(rows: _Rows) -> list[SnapshotCitation]:
    return _by_id(
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
    )


def _rival(r: _Rows) -> SnapshotRival:
    """A rival from the rows ``snapshot_rival_rows`` read (its runs carry their model)."""
    transition = r.get("node_transition")
    held = r.get("consolidation")
    consolidation: SnapshotConsolidation | None = None
    if held is not None:
        consolidation = {
            "id": str(held["id"]),
            "version_id": str(held["node_version_id"]),
            "status": held["to_status"] or "live",
            "transition_id": _s(held["transition"]),
        }
    return {
        "logical_node_id": str(r["version"]["logical_node_id"]),
        "version_id": str(r["version"]["id"]),
        "status": transition["to_status"] if transition else r["version"]["initial_status"],
        "status_transition_id": _s(transition["id"]) if transition else None,
        "claims": _claims(r),
        "runs": _by_id([_run(run, with_model=True) for run in r["runs"] or []]),
        "exposures": _exposures(r),
        "citations": _citations(r),
        "consolidation": consolidation,
    }


def rival_ids(snapshot: Snapshot) -> list[RivalIds]:
    """The rows a v4 snapshot's rivals were read from (what its manifest names)."""
    return [
        {
            "node": r["logical_node_id"],
            "version": r["version_id"],
            "transition": r["status_transition_id"],
            "claims": [c["id"] for c in r["claims"]],
            "exposures": [e["id"] for e in r["exposures"]],
            "citations": [c["id"] for c in r["citations"]],
            "consolidation": None
            if r["consolidation"] is None
            else [r["consolidation"]["id"], r["consolidation"]["transition_id"]],
        }
        for r in snapshot["rivals"]
    ]


def named_rivals(named: Manifest) -> list[RivalIds] | None:
    """The rivals a v4 manifest names (None for a manifest of an earlier format)."""
    text = named.get("rivals")
    if text is None:
        return None
    found: list[RivalIds] = json.loads(text)
    return found


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
    if "rivals" in snapshot:
        manifest["rivals"] = canonical_json(rival_ids(snapshot))
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
