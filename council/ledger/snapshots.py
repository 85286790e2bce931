"""Loading consolidation snapshots from the ledger (queries in council/sql/snapshot.sql).

Both queries are set-based — any number of node versions (or manifests) in one
statement — so the committer loads a whole batch in one view of the data; one
version is a batch of one.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict
from uuid import UUID

from council.domain.canonical import canonical_json
from council.domain.effective import CorrelationPrior, ErrorSums, PairCorrelation, table_from_sums
from council.domain.jsonvalue import JsonObject
from council.domain.manifests import Manifest
from council.domain.quorum import Seat
from council.domain.snapshot import Snapshot, build_snapshot, measured_rows, named_rivals
from council.domain.snapshot_shapes import RivalIds
from council.errors import NotFound
from council.ledger.locks import lock_evidence_shared
from council.ledger.pg import Connection, fetch


class _Model(TypedDict):
    model: str
    provider: str


class _CorrelationInputs(TypedDict):
    prior: CorrelationPrior | None
    min_resolved: int | None
    models: list[_Model]


@dataclass(frozen=True)
class _Manifest:
    """The ids of every row a version's decision depends on (``snapshot_manifests``)."""

    version_id: UUID
    manifest: Manifest
    seats: list[Seat] | None
    correlation_inputs: _CorrelationInputs | None
    rivals: list[RivalIds] | None  # under exclusive_alternatives (format v4)


@dataclass(frozen=True)
class _PairSums:
    a: str
    b: str
    n: int
    sa: int
    sb: int
    sab: int


@dataclass(frozen=True)
class _OwnError:
    model: str
    version_id: str
    err: int


@dataclass(frozen=True)
class _Rows:
    """The rows one manifest names (its number from 1), as one JSON document (``snapshot_rows``)."""

    ord: int
    rows: JsonObject


@dataclass(frozen=True)
class _RivalRows:
    """The rows one rival of a v4 manifest names (``snapshot_rival_rows``)."""

    ord: int
    no: int
    rows: JsonObject


def manifests(conn: Connection, version_ids: Sequence[UUID]) -> dict[UUID, Manifest]:
    """Ids of every row each decision depends on, chosen in one statement (unknown ids are absent)."""
    rows = fetch(conn, "snapshot_manifests", _Manifest, version_ids=list(version_ids))
    found = {row.version_id: row.manifest.copy() for row in rows}
    for row in rows:
        if row.seats is not None:
            found[row.version_id]["council"] = canonical_json(row.seats)
        if row.rivals is not None:
            found[row.version_id]["rivals"] = canonical_json(row.rivals)
    measuring = {row.version_id: row.correlation_inputs for row in rows if row.correlation_inputs is not None}
    if measuring:
        tables = _correlation_tables(conn, measuring)
        for version_id, table in tables.items():
            found[version_id]["correlations"] = canonical_json(table)
    return found


def _correlation_tables(
    conn: Connection, inputs: Mapping[UUID, _CorrelationInputs]
) -> dict[UUID, list[PairCorrelation]]:
    """Per version, the error-correlation table of the models that claimed on it, measured
    now on every other resolved version (two statements for the batch, summed in SQL): what
    a v3 snapshot of a rule set with min_effective_support carries (council/domain/effective.py)."""
    models = sorted({m["model"] for i in inputs.values() for m in i["models"]})
    if not models:
        return {version_id: [] for version_id in inputs}
    sums: dict[tuple[str, str], ErrorSums] = {}
    for row in fetch(conn, "resolved_error_sums", _PairSums, models=models):
        a, b, sa, sb = (row.a, row.b, row.sa, row.sb) if row.a <= row.b else (row.b, row.a, row.sb, row.sa)
        sums[(a, b)] = (row.n, sa, sb, row.sab)
    own: dict[str, dict[str, int]] = {}
    for err in fetch(conn, "resolved_errors_of", _OwnError, models=models, version_ids=list(inputs)):
        own.setdefault(err.version_id, {})[err.model] = err.err
    tables: dict[UUID, list[PairCorrelation]] = {}
    for version_id, given in inputs.items():
        family = {m["model"]: m["provider"] for m in given["models"]}
        mine = own.get(str(version_id), {})
        pairs: dict[tuple[str, str], ErrorSums] = {}
        for a, b in itertools.combinations(sorted(family), 2):
            n, sa, sb, sab = sums.get((a, b), (0, 0, 0, 0))
            if a in mine and b in mine:  # leave the decided version out
                n, sa, sb, sab = n - 1, sa - mine[a], sb - mine[b], sab - mine[a] * mine[b]
            pairs[(a, b)] = (n, sa, sb, sab)
        prior = given["prior"] or {"same_family": 0.0, "other": 0.0}
        tables[version_id] = table_from_sums(
            pairs,
            family,
            {"same_family": float(prior["same_family"]), "other": float(prior["other"])},
            int(given["min_resolved"] or 1),
        )
    return tables


def manifest(conn: Connection, version_id: UUID) -> Manifest:
    found = manifests(conn, [version_id])
    if version_id not in found:
        raise NotFound(f"no node version with id {version_id}")
    return found[version_id]


# What a manifest names: plain lists of row ids, and rows named with their current transition.
_IdSection = Literal["versions", "claims", "runs", "exposures", "citations"]
_StateSection = Literal["branches", "evidence", "pending_actions"]
_IDS: tuple[_IdSection, ...] = ("versions", "claims", "runs", "exposures", "citations")
_STATES: tuple[_StateSection, ...] = ("branches", "evidence", "pending_actions")


def snapshots_from_manifests(conn: Connection, named: Sequence[Manifest]) -> list[Snapshot]:
    """The snapshot each manifest names, in order (one statement for all of them)."""
    if not named:
        return []
    rows = fetch(conn, "snapshot_rows", _Rows, screen=False, **_flattened(named))
    rivals = _rival_rows(conn, named)
    return [
        build_snapshot({**row.rows, **measured_rows(m), **rivals.get(row.ord, {})})
        for row, m in zip(rows, named, strict=True)
    ]


def _rival_rows(conn: Connection, named: Sequence[Manifest]) -> dict[int, dict[str, object]]:
    """Per v4 manifest (by its number from 1), ``{"rivals": [the rows each rival names]}``,
    in one statement for all of them (none when no manifest names rivals)."""
    listed = {ord_: named_rivals(m) for ord_, m in enumerate(named, 1)}
    found: dict[int, dict[str, object]] = {
        o: {"rivals": []} for o, rivals in listed.items() if rivals is not None
    }
    params: dict[str, list[object]] = {
        name: []
        for name in (
            "rival_ords", "rival_nos", "rival_versions", "rival_transitions", "rival_consolidations",
            "rival_consolidation_transitions", "claims_ord", "claims_no", "claims_id", "exposures_ord",
            "exposures_no", "exposures_id", "citations_ord", "citations_no", "citations_id",
        )
    }  # fmt: skip
    for ord_, rivals in listed.items():
        for no, rival in enumerate(rivals or [], 1):
            held = rival["consolidation"] or [None, None]
            for name, value in (
                ("rival_ords", ord_), ("rival_nos", no), ("rival_versions", rival["version"]),
                ("rival_transitions", rival["transition"]), ("rival_consolidations", held[0]),
                ("rival_consolidation_transitions", held[1]),
            ):  # fmt: skip
                params[name].append(value)
            for kind in ("claims", "exposures", "citations"):
                for row_id in rival[kind]:
                    params[f"{kind}_ord"].append(ord_)
                    params[f"{kind}_no"].append(no)
                    params[f"{kind}_id"].append(row_id)
    if params["rival_ords"]:
        for row in fetch(conn, "snapshot_rival_rows", _RivalRows, screen=False, **params):
            rivals_of = found[row.ord]["rivals"]
            assert isinstance(rivals_of, list)
            rivals_of.append(row.rows)
    return found


def _flattened(named: Sequence[Manifest]) -> dict[str, list[object]]:
    """The manifests as the parallel arrays ``snapshot_rows`` takes."""
    heads = (
        "ords",
        "version_ids",
        "node_transitions",
        "rule_set_ids",
        "grouping_algorithm_ids",
        "retraction_named",
        "retractions",
    )
    params: dict[str, list[object]] = {name: [] for name in heads}
    for key in _IDS:
        params[f"{key}_ord"], params[f"{key}_id"] = [], []
    for state in _STATES:
        params[f"{state}_ord"], params[f"{state}_id"], params[f"{state}_transition"] = [], [], []
    for ord_, manifest_ in enumerate(named, 1):
        params["ords"].append(ord_)
        params["version_ids"].append(_text(manifest_["version_id"]))
        params["node_transitions"].append(_text(manifest_["node_transition"]))
        params["rule_set_ids"].append(manifest_["rule_set_id"])
        params["grouping_algorithm_ids"].append(manifest_["grouping_algorithm_id"])
        params["retraction_named"].append("retraction" in manifest_)  # not in manifests before the rule
        params["retractions"].append(_text(manifest_.get("retraction")))
        for key in _IDS:
            for row_id in manifest_[key]:
                params[f"{key}_ord"].append(ord_)
                params[f"{key}_id"].append(str(row_id))
        for state in _STATES:
            for item in manifest_[state]:
                params[f"{state}_ord"].append(ord_)
                params[f"{state}_id"].append(str(item["id"]))
                params[f"{state}_transition"].append(_text(item["transition"]))
    return params


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def snapshot_from_manifest(conn: Connection, named: Manifest) -> Snapshot:
    return snapshots_from_manifests(conn, [named])[0]


def evidence_ids(named: Manifest) -> set[str]:
    return {str(e["id"]) for e in named["evidence"]}


def locked_snapshots(conn: Connection, version_ids: Sequence[UUID], locked: set[str]) -> dict[UUID, Snapshot]:
    """The snapshots of ``version_ids``, with shared locks held on every evidence item they cite.

    Call with the node locks held and shared locks already taken on ``locked``
    (the evidence cited on the versions a statement ago). The evidence locks
    come before the manifests that read validity; if a manifest names evidence
    cited meanwhile, lock that too and take the manifests again.
    """
    while True:
        named = manifests(conn, version_ids)
        extra = set().union(*(evidence_ids(m) for m in named.values())) - locked
        if not extra:
            ids = list(named)
            return dict(zip(ids, snapshots_from_manifests(conn, [named[i] for i in ids]), strict=True))
        lock_evidence_shared(conn, extra)
        locked |= extra


def current_snapshot(conn: Connection, version_id: UUID) -> Snapshot:
    """The snapshot as of now, without locks (for reads such as `council groups`)."""
    return snapshot_from_manifest(conn, manifest(conn, version_id))
