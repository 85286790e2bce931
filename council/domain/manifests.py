"""Evaluation chains: a not-ready evaluation stored as a delta against the one before it (pure).

A node that keeps collecting claims is evaluated after every run that claims on
it, and each evaluation's manifest names every claim, run, exposure and
citation of its version: storing each manifest whole grows with
claims × evaluations. Since revision 0013 the evaluations of one version form a
chain ordered by ``seq``: a *root* (seq 0, and again once ``needs_root``
says so: at least ``ROOT_EVERY`` links on, and those links list as many ids
as the root) stores the whole manifest and section hashes; a *link* stores
only what changed since the evaluation before it — ids added and removed per
manifest section, changed scalars and the hashes of the snapshot sections
that changed. Rebuilding walks from the nearest root, reading at most about
twice what one whole manifest holds. Everything here is a pure function of its arguments; the order in which
other records were written plays no part (docs/architecture.md §4).

Manifests rebuilt from a chain are *normal*: every list sorted by row id. The
rows a manifest names, not their order, determine its snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# A new root no sooner than this many links after the last (see needs_root).
ROOT_EVERY = 64

# A link keeps this many hex digits of each changed section's hash: enough to say which
# section of a rebuilt snapshot differs; the snapshot's whole hash is checked in full.
LINK_HASH_CHARS = 12

# Manifest list sections and their stable short keys in a delta. Plain id lists,
# then rows named with the transition they were read at ({"id", "transition"}).
ID_SECTIONS = {"versions": "v", "claims": "c", "runs": "r", "exposures": "x", "citations": "t"}
STATE_SECTIONS = {"branches": "b", "evidence": "e", "pending_actions": "p"}
SCALARS = {
    "version_id": "i",
    "thread_id": "h",
    "node_transition": "n",
    "rule_set_id": "s",
    "grouping_algorithm_id": "g",
}
# Optional scalars, whose presence matters: a manifest from before the retraction
# rule has no "retraction" key; one from after has it, None when there was none.
OPTIONAL_SCALARS = {"retraction": "z"}
# Snapshot sections (their hashes) under the delta key "#".
SNAPSHOT_SECTIONS = {
    "format": "f",
    "node": "n",
    "branch": "b",
    "objective_forks": "o",
    "claims": "c",
    "runs": "r",
    "exposures": "x",
    "citations": "t",
    "evidence": "e",
    "pending_actions": "p",
    "rule_set": "s",
    "grouping": "g",
}
_SECTION_NAMES = {short: name for name, short in SNAPSHOT_SECTIONS.items()}


def _key(item: Any) -> str:
    return str(item["id"]) if isinstance(item, Mapping) else str(item)


def normal(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest with every list section sorted by row id (same rows, same snapshot)."""
    out = dict(manifest)
    for name in (*ID_SECTIONS, *STATE_SECTIONS):
        out[name] = sorted(manifest[name], key=_key)
    return out


def _encode(item: Any) -> Any:
    return [str(item["id"]), item["transition"]] if isinstance(item, Mapping) else item


def _decode(item: Any, stateful: bool) -> Any:
    return {"id": item[0], "transition": item[1]} if stateful else item


def delta(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    before_sections: Mapping[str, str] | None = None,
    after_sections: Mapping[str, str] | None = None,
    hash_chars: int = LINK_HASH_CHARS,
) -> dict[str, Any]:
    """What turns manifest ``before`` into ``after``: per list section the items added
    ("+" and the section's short key) and the ids removed ("-" and the key), the
    scalars that changed (their short keys), and under "#" the hashes of the
    snapshot sections that changed. Unchanged parts are absent."""
    out: dict[str, Any] = {}
    for name, short in (*ID_SECTIONS.items(), *STATE_SECTIONS.items()):
        old = {_key(i): i for i in before[name]}
        new = {_key(i): i for i in after[name]}
        added = sorted((k for k, i in new.items() if old.get(k) != i), key=str)
        removed = sorted(k for k, i in old.items() if k not in new or new[k] != i)
        # An item whose transition moved is removed and added again.
        if added:
            out["+" + short] = [_encode(new[k]) for k in added]
        if removed:
            out["-" + short] = removed
    for name, short in SCALARS.items():
        if before[name] != after[name]:
            out[short] = after[name]
    for name, short in OPTIONAL_SCALARS.items():
        if name in after and (name not in before or before[name] != after[name]):
            out[short] = after[name]  # may be None: named, and unset
        elif name in before and name not in after:
            out["-" + short] = True
    if before_sections is not None and after_sections is not None:
        changed = {
            SNAPSHOT_SECTIONS[name]: digest[:hash_chars]
            for name, digest in after_sections.items()
            if not same_section(before_sections.get(name), digest)
        }
        if changed:
            out["#"] = changed
    return out


def apply(change: Mapping[str, Any], before: Mapping[str, Any]) -> dict[str, Any]:
    """The (normal) manifest ``change`` turns ``before`` into."""
    out: dict[str, Any] = {}
    for name, short in (*ID_SECTIONS.items(), *STATE_SECTIONS.items()):
        stateful = name in STATE_SECTIONS
        removed = set(change.get("-" + short, ()))
        items = {_key(i): i for i in before[name] if _key(i) not in removed}
        for item in change.get("+" + short, ()):
            decoded = _decode(item, stateful)
            items[_key(decoded)] = decoded
        out[name] = [items[k] for k in sorted(items)]
    for name, short in SCALARS.items():
        out[name] = change[short] if short in change else before[name]
    for name, short in OPTIONAL_SCALARS.items():
        if short in change:
            out[name] = change[short]
        elif name in before and "-" + short not in change:
            out[name] = before[name]
    return out


def same_section(stored: str | None, digest: str | None) -> bool:
    """Whether a stored section hash (whole, or a link's prefix) names the section hashed ``digest``."""
    if stored is None or digest is None:
        return stored is digest
    short = min(len(stored), len(digest))
    return stored[:short] == digest[:short]


def apply_sections(change: Mapping[str, Any], before: Mapping[str, str]) -> dict[str, str]:
    """The snapshot section hashes after ``change``."""
    out = dict(before)
    for short, digest in change.get("#", {}).items():
        out[_SECTION_NAMES[short]] = digest
    return out


def rebuild(
    root: Mapping[str, Any], root_sections: Mapping[str, str], links: Iterable[Mapping[str, Any]]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The manifest and section hashes at the end of a chain: its root, then each link in seq order."""
    manifest, sections = normal(root), dict(root_sections)
    for change in links:
        manifest, sections = apply(change, manifest), apply_sections(change, sections)
    return manifest, sections


def items(manifest_or_delta: Mapping[str, Any]) -> int:
    """How many row ids a manifest (or a delta) lists: the measure of what a walk reads."""
    return sum(len(v) for v in manifest_or_delta.values() if isinstance(v, list))


def needs_root(links: int, root_items: int, delta_items: int) -> bool:
    """Whether the next evaluation of a revision 0013 chain whose root is followed by
    ``links`` links (listing ``delta_items`` ids) stored a new root: once at least
    ``ROOT_EVERY`` links follow the root *and* they list at least as many ids as
    the root (``root_items``) does. A walk therefore reads at most
    about twice what one whole manifest holds (never more than ``ROOT_EVERY``
    links for a small manifest), and the roots of a growing node take geometric
    steps, so they add up to about twice its last manifest, not claims × evaluations.
    (Since revision 0014 a chain has no periodic roots: see council.ledger.evaluation_chains.)"""
    return links >= ROOT_EVERY and delta_items >= root_items


class _Walk:
    """A chain's manifest and section hashes, changed in place link by link."""

    def __init__(self, root: Mapping[str, Any], sections: Mapping[str, str], seq: int) -> None:
        self.lists = {name: {_key(i): i for i in root[name]} for name in (*ID_SECTIONS, *STATE_SECTIONS)}
        self.scalars = {name: root[name] for name in SCALARS}
        self.scalars.update({name: root[name] for name in OPTIONAL_SCALARS if name in root})
        self.sections = dict(sections)
        self.seq, self.root_items, self.links, self.delta_items = seq, items(root), 0, 0

    def apply(self, change: Mapping[str, Any], seq: int) -> None:
        for name, short in (*ID_SECTIONS.items(), *STATE_SECTIONS.items()):
            found = self.lists[name]
            for key in change.get("-" + short, ()):
                found.pop(str(key), None)
            for item in change.get("+" + short, ()):
                decoded = _decode(item, name in STATE_SECTIONS)
                found[_key(decoded)] = decoded
        for name, short in SCALARS.items():
            if short in change:
                self.scalars[name] = change[short]
        for name, short in OPTIONAL_SCALARS.items():
            if short in change:
                self.scalars[name] = change[short]
            elif "-" + short in change:
                self.scalars.pop(name, None)
        for short, digest in change.get("#", {}).items():
            self.sections[_SECTION_NAMES[short]] = digest
        self.seq, self.links = seq, self.links + 1
        self.delta_items += max(1, items(change))

    def manifest(self) -> dict[str, Any]:
        return {**self.scalars, **{name: [f[k] for k in sorted(f)] for name, f in self.lists.items()}}


class Tail:
    """The end of a chain: its manifest and section hashes, its seq and how far it is from its root."""

    def __init__(self, walk: _Walk) -> None:
        self.manifest, self.sections, self.seq = walk.manifest(), dict(walk.sections), walk.seq
        self.links, self.root_items, self.delta_items = walk.links, walk.root_items, walk.delta_items


def _walked(chain: Sequence[Mapping[str, Any]]) -> Iterable[_Walk]:
    """The walk after each stored row (``seq``, ``manifest``, ``section_sha256``,
    ``delta``) of a chain in seq order, starting at a root: each root restarts
    the walk, each link applies to the evaluation before it."""
    state: _Walk | None = None
    for row in chain:
        if row["manifest"] is not None:
            state = _Walk(row["manifest"], row["section_sha256"], row["seq"])
        elif state is None or row["seq"] != state.seq + 1:
            raise ValueError(f"evaluation chain link {row['seq']} does not follow a stored evaluation")
        else:
            state.apply(row["delta"], row["seq"])
        yield state


def walk_at(
    chain: Sequence[Mapping[str, Any]], seqs: Iterable[int]
) -> dict[int, tuple[dict[str, Any], dict[str, str]]]:
    """The (manifest, section hashes) of the evaluations ``seqs`` of a chain, in one pass
    (normal manifests; only those are built)."""
    wanted, out = set(seqs), {}
    for state in _walked(chain):
        if state.seq in wanted:
            out[state.seq] = (state.manifest(), dict(state.sections))
    return out


def walk(chain: Sequence[Mapping[str, Any]]) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """Every (manifest, section hashes) of a chain, in seq order (normal manifests)."""
    return [(w.manifest(), dict(w.sections)) for w in _walked(chain)]


def tail(chain: Sequence[Mapping[str, Any]]) -> Tail:
    """The last evaluation of a (non-empty) chain, rebuilt in one pass."""
    last: _Walk | None = None
    for state in _walked(chain):
        last = state
    if last is None:
        raise ValueError("an empty evaluation chain has no tail")
    return Tail(last)
