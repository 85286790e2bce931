"""Reading and extending evaluation chains (revisions 0013 and 0014; the pure part is
council.domain.manifests and council.domain.chain_codec, the queries
council/sql/evaluations.sql).

New evaluations are written in the compact layout of revision 0014: a binary
``link`` per row, a root only where a chain starts (its version's first
evaluation, after a revision 0013 tail, or when the rule set or grouping
changes), so a hot node stores its manifest once and then one claim's worth
per evaluation. A rebuild walks the chain from its root — about as many rows
as the version has evaluations, each a few dozen bytes, less than reading the
snapshot it names. The committer keeps the tails it wrote or read (``TAILS``,
keyed by evaluation id *and* snapshot hash, so a tail never stands for another
row), so it walks a chain only when another process extended it. Rows of
revision 0013 (a JSON ``delta``) are read as before.

Every reader of a stored evaluation's manifest goes through ``stored``: the
committer (to extend a chain), ``Consolidations.manifests`` and replay.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict
from uuid import UUID

from council.domain import chain_codec
from council.domain import manifests as chain
from council.domain.manifests import ChainRow, Delta, Manifest
from council.domain.snapshot import Snapshot, manifest_of, snapshot_digests
from council.ledger.pg import Connection, fetch


@dataclass(frozen=True)
class _CompactRecord:
    id: UUID
    node_version_id: UUID
    seq: int


class _ChainRow(TypedDict):
    """A row of a chain (``evaluation_compact_chains``): a root's manifest, a link's
    delta, or (compact rows) the encoded ``link`` they are read from."""

    node_version_id: UUID
    seq: int
    manifest: Manifest | None
    section_sha256: dict[str, str] | None
    delta: Delta | None
    link: bytes | None


class _OlderChainRow(TypedDict):
    """A row of a chain written before compact links (``evaluation_chains``)."""

    record_id: UUID
    seq: int | None
    manifest: Manifest | None
    section_sha256: dict[str, str] | None
    delta: Delta | None
    snapshot: Snapshot | None


@dataclass(frozen=True)
class TailEnd:
    """Where a version's chain ends, as ``council_evaluate_read_v1`` read it under the node
    lock (``council_evaluation_tail_v2``): its id, seq, digest (hex) and whether it is compact
    (revision 0014; a 0013 tail is followed by a compact root)."""

    node_version_id: UUID
    id: UUID
    seq: int
    digest: str
    compact: bool


@dataclass(frozen=True)
class _ClaimRun:
    id: UUID
    run_id: UUID


@dataclass(frozen=True)
class Stored:
    """A stored evaluation's manifest and section hashes, as rebuilt; ``seq`` is its
    place in its version's chain (None for a row written before revision 0013)."""

    manifest: Manifest
    sections: dict[str, str]
    seq: int | None


def _readable(row: _ChainRow) -> ChainRow:
    """A chain row as the walk reads it: a compact row's ``link`` decoded into a
    root's manifest and section hashes, or a link's change."""
    found: ChainRow = {
        "seq": row["seq"],
        "manifest": row["manifest"],
        "section_sha256": row["section_sha256"],
        "delta": row["delta"],
    }
    if row["link"] is None:
        return found
    root, change = chain_codec.decode(row["link"])
    if root:
        found["manifest"], found["section_sha256"] = chain_codec.root_manifest(change)
    else:
        found["delta"] = change
    return found


def _chained(row: _OlderChainRow) -> ChainRow:
    """A row of a revision 0013 chain as the walk reads it (its seq is set)."""
    if row["seq"] is None:
        raise ValueError(f"evaluation {row['record_id']} has an unchained row in its chain")
    return {
        "seq": row["seq"],
        "manifest": row["manifest"],
        "section_sha256": row["section_sha256"],
        "delta": row["delta"],
    }


def stored(conn: Connection, record_ids: Sequence[UUID]) -> dict[UUID, Stored]:
    """The manifest and section hashes of each evaluation of ``record_ids`` (unknown ids are
    absent), rebuilt from its chain: compact chains in one statement, each walked once for
    all of its records; older rows in another."""
    if not record_ids:
        return {}
    ids = list(record_ids)
    out: dict[UUID, Stored] = {}
    wanted: dict[UUID, dict[int, UUID]] = {}
    for compact in fetch(conn, "evaluation_compact_records", _CompactRecord, record_ids=ids):
        wanted.setdefault(compact.node_version_id, {})[compact.seq] = compact.id
    if wanted:
        chains: dict[UUID, list[ChainRow]] = {}
        seqs = [min(s) for s in wanted.values()]
        lasts = [max(s) for s in wanted.values()]
        for row in fetch(
            conn, "evaluation_compact_chains", _ChainRow, version_ids=list(wanted), seqs=seqs, lasts=lasts
        ):
            chains.setdefault(row["node_version_id"], []).append(_readable(row))
        for version_id, rows in chains.items():
            for seq, (manifest, sections) in chain.walk_at(rows, wanted[version_id]).items():
                out[wanted[version_id][seq]] = Stored(manifest, sections, seq)
        _derive_runs(conn, out)
    rest = [i for i in ids if i not in out]
    if not rest:
        return out
    rows_of: dict[UUID, list[_OlderChainRow]] = {}
    for older in fetch(conn, "evaluation_chains", _OlderChainRow, record_ids=rest):
        rows_of.setdefault(older["record_id"], []).append(older)
    for record_id, found in rows_of.items():
        last = found[-1]
        if last["seq"] is None:  # written before 0013: whole manifest, or (before 0005) snapshot
            whole, hashes, snapshot = last["manifest"], last["section_sha256"], last["snapshot"]
            if whole is not None and hashes is not None:
                out[record_id] = Stored(whole.copy(), dict(hashes), None)
            elif whole is None and snapshot is not None:
                out[record_id] = Stored(manifest_of(snapshot), snapshot_digests(snapshot)[1], None)
            else:
                raise ValueError(f"evaluation {record_id} stores neither a whole manifest nor a snapshot")
            continue
        end = chain.tail([_chained(row) for row in found])
        out[record_id] = Stored(end.manifest, end.sections, end.seq)
    return out


def _derive_runs(conn: Connection, out: dict[UUID, Stored]) -> None:
    """Give each compact chain's manifest (all of ``out`` so far) its runs: its claims'."""
    claim_ids = sorted({c for s in out.values() for c in s.manifest["claims"]})
    run_of = {
        str(row.id): str(row.run_id)
        for row in fetch(conn, "evaluation_claim_runs", _ClaimRun, claim_ids=claim_ids)
    }
    for record_id, found in out.items():
        out[record_id] = Stored(chain_codec.derive_runs(found.manifest, run_of), found.sections, found.seq)


class Link(TypedDict):
    """The chain columns of a new evaluation (``next_link``): its seq, whether it is a
    root, and its encoded link in hex."""

    seq: int
    root: bool
    link: str


@dataclass(frozen=True)
class Position:
    """Where a version's chain ends: the tail's seq, and (compact chains) its rebuilt end."""

    seq: int
    tail: chain.Tail | None  # None: the tail is a revision 0013 row; the next evaluation is a root


# The compact tails this process wrote or rebuilt, by (evaluation id, snapshot hash): a
# committed row never changes, and a row of the same id and hash names the same snapshot,
# hence the same manifest (a rolled-back write's id may be reused, never with another hash).
TAILS_KEPT = 4096
TAILS: OrderedDict[tuple[UUID, str], chain.Tail] = OrderedDict()


def _keep(key: tuple[UUID, str], tail: chain.Tail) -> None:
    TAILS[key] = tail
    TAILS.move_to_end(key)
    while len(TAILS) > TAILS_KEPT:
        TAILS.popitem(last=False)


def positions(conn: Connection, ends: Sequence[TailEnd]) -> dict[UUID, Position]:
    """Where the chain of each version of ``ends`` ends (read under its node lock): the tails
    this process keeps, and one statement walking the compact chains whose tail it does not."""
    out: dict[UUID, Position] = {}
    walk: list[TailEnd] = []
    for end in ends:
        if not end.compact:
            out[end.node_version_id] = Position(end.seq, None)
        elif (kept := TAILS.get((end.id, end.digest))) is not None and kept.seq == end.seq:
            out[end.node_version_id] = Position(end.seq, kept)
        else:
            walk.append(end)
    if walk:
        rows: dict[UUID, list[ChainRow]] = {}
        lasts = [r.seq for r in walk]
        version_ids = [r.node_version_id for r in walk]
        for row in fetch(
            conn, "evaluation_compact_chains", _ChainRow, version_ids=version_ids, seqs=lasts, lasts=lasts
        ):
            rows.setdefault(row["node_version_id"], []).append(_readable(row))
        for r in walk:
            rebuilt = chain.tail(rows[r.node_version_id])
            _keep((r.id, r.digest), rebuilt)
            out[r.node_version_id] = Position(rebuilt.seq, rebuilt)
    return out


def next_link(position: Position | None, manifest: Manifest, sections: dict[str, str]) -> Link:
    """The chain columns of a new evaluation after ``position``: its seq, whether it is a
    root, and its ``link`` (hex): the whole manifest and section hashes (a root) or the
    change since the tail (a link). A root starts each chain, and follows a 0013 tail or
    a change of rule set or grouping; every other evaluation is a link."""
    seq = 0 if position is None else position.seq + 1
    tail = None if position is None else position.tail
    manifest = chain_codec.without_runs(manifest)  # the tail's, too: runs are derived
    if tail is None or any(tail.manifest[k] != manifest[k] for k in ("rule_set_id", "grouping_algorithm_id")):
        return {"seq": seq, "root": True, "link": chain_codec.encode_root(manifest, sections).hex()}
    change = chain.delta(tail.manifest, manifest, tail.sections, sections, 2 * chain_codec.LINK_HASH_BYTES)
    return {"seq": seq, "root": False, "link": chain_codec.encode_link(change).hex()}


def written(tail: chain.Tail | None, link: Link, evaluation_id: UUID, digest: str) -> None:
    """Keep the tail a just-written evaluation makes (``link`` from ``next_link``)."""
    root, change = chain_codec.decode(bytes.fromhex(link["link"]))
    rows: list[ChainRow] = []
    if root:
        manifest, sections = chain_codec.root_manifest(change)
        rows.append({"seq": link["seq"], "manifest": manifest, "section_sha256": sections, "delta": None})
    elif tail is not None:
        rows.append(
            {"seq": tail.seq, "manifest": tail.manifest, "section_sha256": tail.sections, "delta": None}
        )
        rows.append({"seq": link["seq"], "manifest": None, "section_sha256": None, "delta": change})
    else:
        return
    _keep((evaluation_id, digest), chain.tail(rows))


def reasons_once(reasons: Sequence[Sequence[Mapping[str, object]]]) -> list[Mapping[str, object]]:
    """Each reason of the lists once, by content: what ``council_evaluate_write_v1`` stores
    before the evaluations naming them."""
    return list({json.dumps(r, sort_keys=True): r for listed in reasons for r in listed}.values())
