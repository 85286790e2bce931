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
from typing import NotRequired, TypedDict

from council.domain.jsonvalue import JsonObject, JsonValue

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
# "correlations" and "council" (snapshot format v3) are the canonical JSON of what the
# decision measured when it was made: the error-correlation table of the models that
# claimed and the runs the node's council sent (only under a rule set that reads them).
# "rivals" (snapshot format v4, under exclusive_alternatives) is the canonical JSON of the
# rows its rival alternatives were read from (council.domain.snapshot.rival_manifest).
OPTIONAL_SCALARS = {"retraction": "z", "correlations": "k", "council": "q", "rivals": "a"}
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
    "correlations": "k",  # v3
    "council": "q",  # v3
    "rivals": "a",  # v4
}
_SECTION_NAMES = {short: name for name, short in SNAPSHOT_SECTIONS.items()}


class StateRef(TypedDict):
    """A row named with the transition it was read at (None: never transitioned)."""

    id: str
    transition: str | None


class Manifest(TypedDict):
    """The ids of every row a decision depends on (``snapshot_manifests``)."""

    version_id: str
    thread_id: str
    versions: list[str]
    node_transition: str | None
    branches: list[StateRef]
    claims: list[str]
    runs: list[str]
    exposures: list[str]
    citations: list[str]
    evidence: list[StateRef]
    pending_actions: list[StateRef]
    rule_set_id: str
    grouping_algorithm_id: str
    retraction: NotRequired[str | None]
    correlations: NotRequired[str | None]  # canonical JSON of the table (format v3)
    council: NotRequired[str | None]  # canonical JSON of the council's seats (format v3)
    rivals: NotRequired[str | None]  # canonical JSON of the rivals' row ids (format v4)


# A delta (see ``delta``): short keys to added items, removed ids, changed scalars, and
# under "#" the changed sections' hashes. It is stored as JSON (revision 0013) or
# encoded by council.domain.chain_codec (revision 0014).
Delta = JsonObject
Item = str | StateRef
# A manifest's sections by name: id lists, rows with transitions, scalars.
_Lists = dict[str, dict[str, Item]]
_Scalars = dict[str, str | None]


class ChainRow(TypedDict):
    """A stored evaluation of a chain: a root's manifest and section hashes, or a link's delta."""

    seq: int
    manifest: Manifest | None
    section_sha256: dict[str, str] | None
    delta: Delta | None


def _key(item: Item) -> str:
    return item["id"] if isinstance(item, dict) else item


def _opt(value: JsonValue) -> str | None:
    return None if value is None else str(value)


def _lists(manifest: Manifest) -> _Lists:
    def ids(found: list[str]) -> dict[str, Item]:
        return {i: i for i in found}

    def refs(found: list[StateRef]) -> dict[str, Item]:
        return {r["id"]: r for r in found}

    return {
        "versions": ids(manifest["versions"]),
        "claims": ids(manifest["claims"]),
        "runs": ids(manifest["runs"]),
        "exposures": ids(manifest["exposures"]),
        "citations": ids(manifest["citations"]),
        "branches": refs(manifest["branches"]),
        "evidence": refs(manifest["evidence"]),
        "pending_actions": refs(manifest["pending_actions"]),
    }


def _scalars(manifest: Manifest) -> _Scalars:
    scalars: _Scalars = {
        "version_id": manifest["version_id"],
        "thread_id": manifest["thread_id"],
        "node_transition": manifest["node_transition"],
        "rule_set_id": manifest["rule_set_id"],
        "grouping_algorithm_id": manifest["grouping_algorithm_id"],
    }
    named: Mapping[str, object] = manifest
    for name in OPTIONAL_SCALARS:
        if name in named:
            value = named[name]
            scalars[name] = None if value is None else str(value)
    return scalars


def _assemble(scalars: _Scalars, lists: _Lists) -> Manifest:
    """A normal manifest: every list sorted by row id."""

    def ids(name: str) -> list[str]:
        return [str(_key(i)) for _, i in sorted(lists[name].items())]

    def refs(name: str) -> list[StateRef]:
        return [i for _, i in sorted(lists[name].items()) if isinstance(i, dict)]

    manifest: Manifest = {
        "version_id": str(scalars["version_id"]),
        "thread_id": str(scalars["thread_id"]),
        "node_transition": scalars["node_transition"],
        "rule_set_id": str(scalars["rule_set_id"]),
        "grouping_algorithm_id": str(scalars["grouping_algorithm_id"]),
        "versions": ids("versions"),
        "claims": ids("claims"),
        "runs": ids("runs"),
        "exposures": ids("exposures"),
        "citations": ids("citations"),
        "branches": refs("branches"),
        "evidence": refs("evidence"),
        "pending_actions": refs("pending_actions"),
    }
    if "retraction" in scalars:
        manifest["retraction"] = scalars["retraction"]
    if "correlations" in scalars:
        manifest["correlations"] = scalars["correlations"]
    if "council" in scalars:
        manifest["council"] = scalars["council"]
    if "rivals" in scalars:
        manifest["rivals"] = scalars["rivals"]
    return manifest


def normal(manifest: Manifest) -> Manifest:
    """The manifest with every list section sorted by row id (same rows, same snapshot)."""
    return {
        **manifest,
        "versions": sorted(manifest["versions"]),
        "claims": sorted(manifest["claims"]),
        "runs": sorted(manifest["runs"]),
        "exposures": sorted(manifest["exposures"]),
        "citations": sorted(manifest["citations"]),
        "branches": sorted(manifest["branches"], key=_key),
        "evidence": sorted(manifest["evidence"], key=_key),
        "pending_actions": sorted(manifest["pending_actions"], key=_key),
    }


def _encode(item: Item) -> JsonValue:
    return [item["id"], item["transition"]] if isinstance(item, dict) else item


def _decode(item: JsonValue, stateful: bool) -> Item:
    if stateful:
        assert isinstance(item, list)
        return {"id": str(item[0]), "transition": _opt(item[1])}
    return str(item)


def _added(change: Mapping[str, JsonValue], key: str) -> list[JsonValue]:
    found = change.get(key)
    return found if isinstance(found, list) else []


def _hashes(change: Mapping[str, JsonValue]) -> dict[str, str]:
    found = change.get("#")
    return {short: str(digest) for short, digest in found.items()} if isinstance(found, dict) else {}


def delta(
    before: Manifest,
    after: Manifest,
    before_sections: Mapping[str, str] | None = None,
    after_sections: Mapping[str, str] | None = None,
    hash_chars: int = LINK_HASH_CHARS,
) -> Delta:
    """What turns manifest ``before`` into ``after``: per list section the items added
    ("+" and the section's short key) and the ids removed ("-" and the key), the
    scalars that changed (their short keys), and under "#" the hashes of the
    snapshot sections that changed. Unchanged parts are absent."""
    out: Delta = {}
    old_lists, new_lists = _lists(before), _lists(after)
    old_scalars, new_scalars = _scalars(before), _scalars(after)
    for name, short in (*ID_SECTIONS.items(), *STATE_SECTIONS.items()):
        old, new = old_lists[name], new_lists[name]
        added = sorted((k for k, i in new.items() if old.get(k) != i), key=str)
        removed = sorted(k for k, i in old.items() if k not in new or new[k] != i)
        # An item whose transition moved is removed and added again.
        if added:
            out["+" + short] = [_encode(new[k]) for k in added]
        if removed:
            out["-" + short] = list[JsonValue](removed)
    for name, short in SCALARS.items():
        if old_scalars[name] != new_scalars[name]:
            out[short] = new_scalars[name]
    for name, short in OPTIONAL_SCALARS.items():
        if name in new_scalars and (name not in old_scalars or old_scalars[name] != new_scalars[name]):
            out[short] = new_scalars[name]  # may be None: named, and unset
        elif name in old_scalars and name not in new_scalars:
            out["-" + short] = True
    if before_sections is not None and after_sections is not None:
        changed = {
            SNAPSHOT_SECTIONS[name]: digest[:hash_chars]
            for name, digest in after_sections.items()
            if not same_section(before_sections.get(name), digest)
        }
        if changed:
            out["#"] = dict(changed)
    return out


def apply(change: Mapping[str, JsonValue], before: Manifest) -> Manifest:
    """The (normal) manifest ``change`` turns ``before`` into."""
    lists, scalars = _lists(before), _scalars(before)
    for name, short in (*ID_SECTIONS.items(), *STATE_SECTIONS.items()):
        stateful = name in STATE_SECTIONS
        items = lists[name]
        for key in _added(change, "-" + short):
            items.pop(str(key), None)
        for item in _added(change, "+" + short):
            decoded = _decode(item, stateful)
            items[_key(decoded)] = decoded
    for name, short in SCALARS.items():
        if short in change:
            scalars[name] = _opt(change[short])
    for name, short in OPTIONAL_SCALARS.items():
        if short in change:
            scalars[name] = _opt(change[short])
        elif "-" + short in change:
            scalars.pop(name, None)
    return _assemble(scalars, lists)


def same_section(stored: str | None, digest: str | None) -> bool:
    """Whether a stored section hash (whole, or a link's prefix) names the section hashed ``digest``."""
    if stored is None or digest is None:
        return stored is digest
    short = min(len(stored), len(digest))
    return stored[:short] == digest[:short]


def apply_sections(change: Mapping[str, JsonValue], before: Mapping[str, str]) -> dict[str, str]:
    """The snapshot section hashes after ``change``."""
    out = dict(before)
    for short, digest in _hashes(change).items():
        out[_SECTION_NAMES[short]] = digest
    return out


def rebuild(
    root: Manifest, root_sections: Mapping[str, str], links: Iterable[Mapping[str, JsonValue]]
) -> tuple[Manifest, dict[str, str]]:
    """The manifest and section hashes at the end of a chain: its root, then each link in seq order."""
    manifest, sections = normal(root), dict(root_sections)
    for change in links:
        manifest, sections = apply(change, manifest), apply_sections(change, sections)
    return manifest, sections


def items(manifest_or_delta: Mapping[str, object]) -> int:
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

    def __init__(self, root: Manifest, sections: Mapping[str, str], seq: int) -> None:
        self.lists, self.scalars = _lists(root), _scalars(root)
        self.sections = dict(sections)
        self.seq, self.root_items, self.links, self.delta_items = seq, items(root), 0, 0

    def apply(self, change: Mapping[str, JsonValue], seq: int) -> None:
        for name, short in (*ID_SECTIONS.items(), *STATE_SECTIONS.items()):
            found = self.lists[name]
            for key in _added(change, "-" + short):
                found.pop(str(key), None)
            for item in _added(change, "+" + short):
                decoded = _decode(item, name in STATE_SECTIONS)
                found[_key(decoded)] = decoded
        for name, short in SCALARS.items():
            if short in change:
                self.scalars[name] = _opt(change[short])
        for name, short in OPTIONAL_SCALARS.items():
            if short in change:
                self.scalars[name] = _opt(change[short])
            elif "-" + short in change:
                self.scalars.pop(name, None)
        for short, digest in _hashes(change).items():
            self.sections[_SECTION_NAMES[short]] = digest
        self.seq, self.links = seq, self.links + 1
        self.delta_items += max(1, items(change))

    def manifest(self) -> Manifest:
        return _assemble(self.scalars, self.lists)


class Tail:
    """The end of a chain: its manifest and section hashes, its seq and how far it is from its root."""

    def __init__(self, walk: _Walk) -> None:
        self.manifest, self.sections, self.seq = walk.manifest(), dict(walk.sections), walk.seq
        self.links, self.root_items, self.delta_items = walk.links, walk.root_items, walk.delta_items


def _walked(chain: Sequence[ChainRow]) -> Iterable[_Walk]:
    """The walk after each stored row (``seq``, ``manifest``, ``section_sha256``,
    ``delta``) of a chain in seq order, starting at a root: each root restarts
    the walk, each link applies to the evaluation before it."""
    state: _Walk | None = None
    for row in chain:
        if row["manifest"] is not None:
            state = _Walk(row["manifest"], row["section_sha256"] or {}, row["seq"])
        elif state is None or row["seq"] != state.seq + 1:
            raise ValueError(f"evaluation chain link {row['seq']} does not follow a stored evaluation")
        else:
            state.apply(row["delta"] or {}, row["seq"])
        yield state


def walk_at(chain: Sequence[ChainRow], seqs: Iterable[int]) -> dict[int, tuple[Manifest, dict[str, str]]]:
    """The (manifest, section hashes) of the evaluations ``seqs`` of a chain, in one pass
    (normal manifests; only those are built)."""
    wanted, out = set(seqs), {}
    for state in _walked(chain):
        if state.seq in wanted:
            out[state.seq] = (state.manifest(), dict(state.sections))
    return out


def walk(chain: Sequence[ChainRow]) -> list[tuple[Manifest, dict[str, str]]]:
    """Every (manifest, section hashes) of a chain, in seq order (normal manifests)."""
    return [(w.manifest(), dict(w.sections)) for w in _walked(chain)]


def tail(chain: Sequence[ChainRow]) -> Tail:
    """The last evaluation of a (non-empty) chain, rebuilt in one pass."""
    last: _Walk | None = None
    for state in _walked(chain):
        last = state
    if last is None:
        raise ValueError("an empty evaluation chain has no tail")
    return Tail(last)
