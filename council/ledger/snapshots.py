"""Loading consolidation snapshots from the ledger (queries in council/sql/snapshot.sql,
each a call of a function of revision 0044).

Both queries are set-based — any number of node versions (or manifests) in one
statement; one version is a batch of one. The committer reads the same functions' rows
inside ``council_evaluate_read_v1`` (under its locks) and builds its snapshots from them
with :func:`read_snapshots`, the same code as :func:`snapshots_from_manifests`, so a
snapshot hashes alike whichever way it was read.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict
from uuid import UUID

from council.domain.canonical import canonical_json
from council.domain.effective import CorrelationPrior, ErrorSums, PairCorrelation, table_from_sums
from council.domain.jsonvalue import JsonObject
from council.domain.manifests import Manifest
from council.domain.quorum import Seat
from council.domain.snapshot import Snapshot, build_snapshot, measured_rows, named_rivals
from council.domain.snapshot_shapes import RivalIds
from council.errors import NotFound
from council.ledger.pg import Connection, fetch


class _Model(TypedDict):
    model: str
    provider: str


class CorrelationInputs(TypedDict):
    prior: CorrelationPrior | None
    min_resolved: int | None
    models: list[_Model]


@dataclass(frozen=True)
class _Manifest:
    """The ids of every row a version's decision depends on (``snapshot_manifests``)."""

    version_id: UUID
    manifest: Manifest
    seats: list[Seat] | None
    correlation_inputs: CorrelationInputs | None
    rivals: list[RivalIds] | None  # under exclusive_alternatives (format v4)


class PairSums(TypedDict):
    """Error sums of a pair of models over resolved versions (``resolved_error_sums``)."""

    a: str
    b: str
    n: int
    sa: int
    sb: int
    sab: int


class OwnError(TypedDict):
    """A model's error on a resolved version being decided (``resolved_errors_of``)."""

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


class _Rivals(TypedDict):
    """The rivals a v4 manifest names, with the manifest's number from 1."""

    ord: int
    rivals: list[RivalIds]


class SnapshotRead(TypedDict):
    """What ``council_evaluate_read_v1`` read for one version's snapshot: the columns of
    ``snapshot_manifests``, the rows of ``snapshot_rows`` and its rivals' rows, in order."""

    version_id: str
    manifest: Manifest
    seats: list[Seat] | None
    correlation_inputs: CorrelationInputs | None
    rivals: list[RivalIds] | None
    rows: JsonObject
    rival_rows: list[JsonObject]


def manifests(conn: Connection, version_ids: Sequence[UUID]) -> dict[UUID, Manifest]:
    """Ids of every row each decision depends on, chosen in one statement (unknown ids are absent)."""
    rows = fetch(conn, "snapshot_manifests", _Manifest, version_ids=list(version_ids))
    measured = _measured(rows)
    if not measured:
        return _named(rows, {})
    models = sorted({m["model"] for i in measured.values() for m in i["models"]})
    sums = fetch(conn, "resolved_error_sums", PairSums, models=models) if models else []
    own = (
        fetch(conn, "resolved_errors_of", OwnError, models=models, version_ids=list(measured))
        if models
        else []
    )
    return _named(rows, _correlation_tables(measured, sums, own))


def _measured(rows: Sequence[_Manifest]) -> dict[UUID, CorrelationInputs]:
    """The versions whose decision measures error correlations (min_effective_support)."""
    return {row.version_id: row.correlation_inputs for row in rows if row.correlation_inputs is not None}


def _named(rows: Sequence[_Manifest], tables: Mapping[UUID, list[PairCorrelation]]) -> dict[UUID, Manifest]:
    """Each version's manifest as a decision names it: the rows' ids, with the council's
    seats, the rivals and the correlation table as canonical JSON where the rule set has them."""
    found = {row.version_id: row.manifest.copy() for row in rows}
    for row in rows:
        if row.seats is not None:
            found[row.version_id]["council"] = canonical_json(row.seats)
        if row.rivals is not None:
            found[row.version_id]["rivals"] = canonical_json(row.rivals)
    for version_id, table in tables.items():
        found[version_id]["correlations"] = canonical_json(table)
    return found


def _correlation_tables(
    inputs: Mapping[UUID, CorrelationInputs], sums_read: Sequence[PairSums], own_read: Sequence[OwnError]
) -> dict[UUID, list[PairCorrelation]]:
    """Per version, the error-correlation table of the models that claimed on it, measured
    now on every other resolved version (the sums of ``resolved_error_sums`` less the
    version's own errors, ``resolved_errors_of``): what a v3 snapshot of a rule set with
    min_effective_support carries (council/domain/effective.py)."""
    if not any(i["models"] for i in inputs.values()):
        return {version_id: [] for version_id in inputs}
    sums: dict[tuple[str, str], ErrorSums] = {}
    for row in sums_read:
        a, b, sa, sb = row["a"], row["b"], row["sa"], row["sb"]
        if a > b:
            a, b, sa, sb = b, a, sb, sa
        sums[(a, b)] = (row["n"], sa, sb, row["sab"])
    own: dict[str, dict[str, int]] = {}
    for err in own_read:
        own.setdefault(err["version_id"], {})[err["model"]] = err["err"]
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


def snapshots_from_manifests(conn: Connection, named: Sequence[Manifest]) -> list[Snapshot]:
    """The snapshot each manifest names, in order (one statement for all of them, and one
    more for the rivals v4 manifests name)."""
    if not named:
        return []
    rows = fetch(conn, "snapshot_rows", _Rows, screen=False, manifests=json.dumps(named, default=str))
    listed = _rivals_listed(named)
    rivals: list[_RivalRows] = []
    if any(r["rivals"] for r in listed):
        rivals = fetch(conn, "snapshot_rival_rows", _RivalRows, screen=False, rivals=json.dumps(listed))
    return _built(named, [row.rows for row in rows], listed, rivals)


def _rivals_listed(named: Sequence[Manifest]) -> list[_Rivals]:
    """The rivals each v4 manifest names, with its number from 1 (``snapshot_rival_rows``)."""
    listed = ((ord_, named_rivals(m)) for ord_, m in enumerate(named, 1))
    return [{"ord": ord_, "rivals": rivals} for ord_, rivals in listed if rivals is not None]


def _built(
    named: Sequence[Manifest],
    rows: Sequence[JsonObject],
    listed: Sequence[_Rivals],
    rivals: Sequence[_RivalRows],
) -> list[Snapshot]:
    """Each manifest's snapshot from the rows it names and the rows its rivals name."""
    of: dict[int, list[JsonObject]] = {r["ord"]: [] for r in listed}
    for rival in rivals:
        of[rival.ord].append(rival.rows)
    return [
        build_snapshot({**found, **measured_rows(m), **({"rivals": of[o]} if o in of else {})})
        for o, (found, m) in enumerate(zip(rows, named, strict=True), 1)
    ]


def snapshot_from_manifest(conn: Connection, named: Manifest) -> Snapshot:
    return snapshots_from_manifests(conn, [named])[0]


def evidence_ids(named: Manifest) -> set[str]:
    return {str(e["id"]) for e in named["evidence"]}


def read_snapshots(
    decided: Sequence[SnapshotRead], error_sums: Sequence[PairSums], own_errors: Sequence[OwnError]
) -> dict[UUID, Snapshot]:
    """The snapshots of the versions ``council_evaluate_read_v1`` read (with the error sums
    it read for them), built exactly as ``snapshots_from_manifests`` builds them."""
    rows = [
        _Manifest(UUID(d["version_id"]), d["manifest"], d["seats"], d["correlation_inputs"], d["rivals"])
        for d in decided
    ]
    named_by = _named(rows, _correlation_tables(_measured(rows), error_sums, own_errors))
    named = [named_by[row.version_id] for row in rows]
    rivals = [
        _RivalRows(o, no, found)
        for o, d in enumerate(decided, 1)
        for no, found in enumerate(d["rival_rows"], 1)
    ]
    built = _built(named, [d["rows"] for d in decided], _rivals_listed(named), rivals)
    return dict(zip((row.version_id for row in rows), built, strict=True))


def current_snapshot(conn: Connection, version_id: UUID) -> Snapshot:
    """The snapshot as of now, without locks (for reads such as `council groups`)."""
    return snapshot_from_manifest(conn, manifest(conn, version_id))
