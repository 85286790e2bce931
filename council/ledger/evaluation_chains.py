"""Reading and extending evaluation chains (revision 0013; the pure part is
council.domain.manifests, the queries council/sql/evaluations.sql).

Every reader of a stored evaluation's manifest goes through ``stored``: the
committer (to extend a chain), ``Consolidations.manifests`` and replay.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from sqlalchemy import Connection

from council.domain import manifests as chain
from council.domain.canonical import canonical_sha256
from council.domain.snapshot import manifest_of, snapshot_digests
from council.sql import query


@dataclass(frozen=True)
class Stored:
    """A stored evaluation's manifest and section hashes, as rebuilt; ``seq`` is its
    place in its version's chain (None for a row written before revision 0013)."""

    manifest: dict[str, Any]
    sections: dict[str, str]
    seq: int | None


def stored(conn: Connection, record_ids: Sequence[UUID]) -> dict[UUID, Stored]:
    """The manifest and section hashes of each evaluation of ``record_ids`` (unknown ids are
    absent), rebuilt from its chain in one statement."""
    if not record_ids:
        return {}
    rows: dict[UUID, list[Any]] = {}
    for row in conn.execute(query("evaluation_chains"), {"record_ids": list(record_ids)}).mappings():
        rows.setdefault(row["record_id"], []).append(row)
    out: dict[UUID, Stored] = {}
    for record_id, found in rows.items():
        last = found[-1]
        if last["seq"] is None:  # written before 0013: whole manifest, or (before 0005) snapshot
            if last["manifest"] is not None:
                out[record_id] = Stored(dict(last["manifest"]), dict(last["section_sha256"]), None)
            else:
                snapshot = last["snapshot"]
                out[record_id] = Stored(manifest_of(snapshot), snapshot_digests(snapshot)[1], None)
            continue
        end = chain.tail(found)
        out[record_id] = Stored(end.manifest, end.sections, end.seq)
    return out


def tails(conn: Connection, version_ids: Sequence[UUID]) -> dict[UUID, chain.Tail]:
    """The newest chained evaluation of each version that has one (call under its node lock)."""
    rows: dict[UUID, list[Any]] = {}
    for row in conn.execute(query("evaluation_tails"), {"version_ids": list(version_ids)}).mappings():
        rows.setdefault(row["node_version_id"], []).append(row)
    return {version_id: chain.tail(found) for version_id, found in rows.items()}


def next_link(tail: chain.Tail | None, manifest: dict[str, Any], sections: dict[str, str]) -> dict[str, Any]:
    """The chain columns of a new evaluation after ``tail``: seq, and either the whole
    manifest and section hashes (a root) or the delta against the tail (a link)."""
    if tail is None:
        return {"seq": 0, "manifest": manifest, "sections": sections, "delta": None}
    if chain.needs_root(tail.links, tail.root_items, tail.delta_items):
        return {"seq": tail.seq + 1, "manifest": manifest, "sections": sections, "delta": None}
    change = chain.delta(tail.manifest, manifest, tail.sections, sections)
    return {"seq": tail.seq + 1, "manifest": None, "sections": None, "delta": change}


def store_reasons(conn: Connection, reasons: Sequence[list[dict[str, Any]]]) -> list[list[str]]:
    """Store each reason once by content; the hashes of each list's reasons, in order."""
    hashes = [[canonical_sha256(r) for r in listed] for listed in reasons]
    unique = {
        h: r
        for listed, found in zip(reasons, hashes, strict=True)
        for h, r in zip(found, listed, strict=True)
    }
    if unique:
        items = [{"sha256": h, "reason": r} for h, r in unique.items()]
        conn.execute(query("evaluation_reasons"), {"reasons": json.dumps(items)})
    return hashes
