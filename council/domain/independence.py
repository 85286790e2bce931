"""Independence grouping `indep-v1` (docs/architecture.md §3): connected components of claiming runs.

The vertices are the runs that claimed on one node version. Two runs are linked
when one is the other's parent or they share a parent, when one was shown the
other's stance, when their run-specific inputs are similar (Jaccard), or when
the evidence they cited overlaps enough (shared count and Jaccard). Each
component then yields at most one `support` group (originate, endorse) and one
`dispute` group; abstaining runs join components but form no group.

A node may gather thousands of runs, so nothing here compares all pairs:
- parents are bucketed by parent id, exposures are explicit edges;
- the two similarity links are an exact set-similarity join: runs with an
  identical set are collapsed first (an identical set is always similar enough
  once it is large enough, so those runs are united directly), then the
  distinct sets go through prefix filtering (items ordered rarest first; two
  sets with overlap >= o >= k share k items within each one's first
  |s| - o + k items). The key is one item, or a pair of items when every
  qualifying pair must share two (the evidence link's minimum): with a few
  hundred evidence items cited evenly, single items make every probe walk
  long lists of candidates that then fail, pairs almost none. Candidates
  come from an inverted index over prefix keys bucketed by component, so a
  probe skips whole components it already belongs to; a candidate whose
  remaining items cannot reach the overlap is dropped (positional filter),
  and the rest are verified exactly.
Connectivity is a union-find, so the result does not depend on input order.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from council.domain.canonical import sha256_text
from council.domain.vocabulary import CLAIM_TYPES, SUPPORT_CLAIMS

# Float slack for the filters' bounds: a filter may only ever let more through.
_EPS = 1e-9
# Up to this many distinct sets every pair is compared (exactly, as the prefix join verifies
# its candidates), without the index; a recorded grouping (merge_links) keeps the prefix join,
# whose merge order it shows.
_ALL_PAIRS = 24


@dataclass(frozen=True)
class RunFacts:
    """What grouping needs to know about one run that claimed on the node."""

    run_id: str
    provider: str
    stance: str  # originate | endorse | dispute | abstain (its claim on this node version)
    confidence: float
    parent_run_id: str | None = None
    exposed_to: frozenset[str] = field(default_factory=frozenset)  # runs whose stance it was shown
    input_features: frozenset[str] = field(default_factory=frozenset)  # run-specific input, briefing excluded
    cited_evidence: frozenset[str] = field(default_factory=frozenset)  # evidence it cited for this node


@dataclass(frozen=True)
class GroupingParams:
    link_parent: bool
    link_exposure: bool
    input_jaccard: float
    evidence_jaccard: float
    evidence_min_shared: int

    @classmethod
    def from_record(cls, params: Mapping[str, Any]) -> GroupingParams:
        return cls(
            link_parent=bool(params["link_parent"]),
            link_exposure=bool(params["link_exposure"]),
            input_jaccard=float(params["input_jaccard"]),
            evidence_jaccard=float(params["evidence_jaccard"]),
            evidence_min_shared=int(params["evidence_min_shared"]),
        )


@dataclass(frozen=True)
class Group:
    id: str  # stable: derived from kind and sorted member ids
    kind: str  # support | dispute
    runs: tuple[str, ...]  # sorted run ids of this stance in the component
    providers: tuple[str, ...]  # sorted distinct providers of those runs
    max_confidence: float
    component_runs: tuple[str, ...]  # every run of the component (any stance), sorted


@dataclass(frozen=True)
class Link:
    """Why two runs are in one component: ``kind`` is parent, exposure,
    similar_input or shared_evidence."""

    a: str
    b: str
    kind: str


def group_runs(runs: Sequence[RunFacts], params: GroupingParams) -> list[Group]:
    """The support and dispute groups of the runs' connected components, in (kind, runs) order."""
    return _groups(runs, _components(runs, params))


def group_many(fact_lists: Sequence[Sequence[RunFacts]], params: GroupingParams) -> list[list[Group]]:
    """The groups of each list of runs, as ``group_runs`` gives them. Lists of the same runs
    with the same linking facts (parent, exposures, inputs, cited evidence: all but the
    stance and its confidence) share one computation of the components: one node's
    alternatives, each with its rivals' supporters as disputes, are the same runs with
    other stances (council/domain/alternatives.py)."""
    found: list[list[Group]] = []
    shared: dict[tuple[tuple[object, ...], ...], _UnionFind] = {}
    for facts in fact_lists:
        ordered = sorted(facts, key=lambda f: f.run_id)
        key = tuple(
            (f.run_id, f.parent_run_id, f.exposed_to, f.input_features, f.cited_evidence) for f in ordered
        )
        components = shared.get(key)
        if components is None:
            components = shared[key] = _components(ordered, params)
        found.append(_groups(ordered, components))
    return found


def merge_links(runs: Sequence[RunFacts], params: GroupingParams) -> list[Link]:
    """The links that joined two components, in the order grouping found them: a
    spanning forest of the components, one link per merge, each with its kind.
    (What a person is shown as the reason two groups became one; not every link.)"""
    components = _UnionFind(len(runs), record=True)
    _components(runs, params, components)
    return [Link(runs[a].run_id, runs[b].run_id, kind) for a, b, kind in components.merges]


def _components(
    runs: Sequence[RunFacts], params: GroupingParams, components: _UnionFind | None = None
) -> _UnionFind:
    index: dict[str, int] = {}
    for position, run in enumerate(runs):
        if run.run_id in index:
            raise ValueError(f"run {run.run_id!r} is given more than once")
        if run.stance not in CLAIM_TYPES:
            raise ValueError(f"run {run.run_id!r} has unknown stance {run.stance!r}")
        index[run.run_id] = position

    components = components or _UnionFind(len(runs))
    components.kind = "parent"
    if params.link_parent:
        _link_parents(runs, index, components)
    components.kind = "exposure"
    if params.link_exposure:
        for position, run in enumerate(runs):
            for other in run.exposed_to:
                if other in index:  # exposure to a run that did not claim here links nothing
                    components.union(position, index[other])
    components.kind = "similar_input"
    _link_similar([run.input_features for run in runs], params.input_jaccard, 0, components)
    components.kind = "shared_evidence"
    _link_similar(
        [run.cited_evidence for run in runs],
        params.evidence_jaccard,
        params.evidence_min_shared,
        components,
    )
    return components


class _UnionFind:
    def __init__(self, size: int, *, record: bool = False) -> None:
        self._parent = list(range(size))
        self._size = [1] * size
        self._record = record
        self.recording = record
        self.kind = ""  # the kind of link being added, for the record
        self.merges: list[tuple[int, int, str]] = []

    def find(self, item: int) -> int:
        parent = self._parent
        while parent[item] != item:
            parent[item] = parent[parent[item]]  # path halving
            item = parent[item]
        return item

    def union(self, a: int, b: int) -> None:
        x, y = a, b
        a, b = self.find(a), self.find(b)
        if a == b:
            return
        if self._record:
            self.merges.append((x, y, self.kind))
        if self._size[a] < self._size[b]:
            a, b = b, a
        self._parent[b] = a
        self._size[a] += self._size[b]


def _link_parents(runs: Sequence[RunFacts], index: Mapping[str, int], components: _UnionFind) -> None:
    siblings: dict[str, int] = {}
    for position, run in enumerate(runs):
        parent = run.parent_run_id
        if parent is None:
            continue
        if parent in index:
            components.union(position, index[parent])
        # The parent need not have claimed here: sharing it is the link.
        components.union(position, siblings.setdefault(parent, position))


def _min_overlap(bound: float, min_shared: int) -> int:
    """Least overlap a qualifying pair can have, given a real-valued lower bound."""
    return max(math.ceil(bound - _EPS), min_shared, 1)


def _link_similar(
    sets: Sequence[frozenset[str]], threshold: float, min_shared: int, components: _UnionFind
) -> None:
    """Unite the runs whose sets have Jaccard >= threshold and overlap >= min_shared (both non-empty)."""
    if threshold > 1 or not any(sets):
        return  # not even identical sets qualify, or no run has a set (nothing cited, no input)
    holders: dict[frozenset[str], list[int]] = defaultdict(list)
    for position, items in enumerate(sets):
        if len(items) >= max(min_shared, 1):  # a smaller set cannot reach the overlap
            holders[items].append(position)
    for positions in holders.values():
        for position in positions[1:]:
            components.union(positions[0], position)
    if len(holders) < 2:
        return  # one distinct set (or none): nothing left to join
    if threshold <= 0 and min_shared <= 0:
        # Every pair of non-empty sets qualifies, even a disjoint one.
        distinct = [positions[0] for positions in holders.values()]
        for position in distinct[1:]:
            components.union(distinct[0], position)
        return

    if len(holders) <= _ALL_PAIRS and not components.recording:
        # A few distinct sets (a node of a debate's turns): comparing every pair exactly is
        # cheaper than building the prefix index, and unites the same components.
        held = list(holders.items())
        for i, (items, positions) in enumerate(held):
            for other, other_positions in held[i + 1 :]:
                shared = len(items & other)
                if shared >= min_shared and shared / (len(items) + len(other) - shared) >= threshold:
                    components.union(positions[0], other_positions[0])
        return
    _prefix_join(
        {items: positions[0] for items, positions in holders.items()}, threshold, min_shared, components
    )


def _prefix_join(
    holders: Mapping[frozenset[str], int], threshold: float, min_shared: int, components: _UnionFind
) -> None:
    """Unite the holders of qualifying distinct sets, comparing only pairs that share a prefix item."""
    frequency = Counter(item for items in holders for item in items)
    rarest_first = sorted(frequency, key=lambda item: (frequency[item], item))
    rank = {item: order for order, item in enumerate(rarest_first)}
    t = max(threshold, 0.0)
    # Jaccard(r, s) >= t  <=>  |r ∩ s| >= t/(1+t)·(|r| + |s|). Probing in increasing size
    # means every indexed r has |r| <= |s|, so a qualifying pair overlaps by at least t|s|
    # (the probe prefix) and by at least 2t/(1+t)·|r| (the indexed prefix).
    ratio = t / (1 + t)
    # Keys are single items, or pairs when every qualifying pair shares two or more.
    k = 2 if min_shared >= 2 else 1
    # Prefix key -> component root (as of filing, refreshed lazily) -> (set number,
    # position in that set of the key's last item). Bucketing by component lets a
    # probe skip a whole component it already belongs to: popular items would
    # otherwise make it walk one giant component set by set.
    inverted: dict[tuple[int, ...], dict[int, list[tuple[int, int]]]] = defaultdict(dict)
    indexed: list[tuple[frozenset[str], int]] = []
    find = components.find
    for items in sorted(holders, key=len):
        size = len(items)
        holder = holders[items]
        tokens = sorted(rank[item] for item in items)
        need = [_min_overlap(ratio * (other + size), min_shared) for other in range(size + 1)]
        seen: set[int] = set()
        home = find(holder)
        for at, key in _keys(tokens, size - _min_overlap(t * size, min_shared) + k, k):
            buckets = inverted.get(key)
            if not buckets:
                continue
            stale: list[int] = []
            for root, entries in buckets.items():
                current = find(root)
                if current != root:
                    stale.append(root)
                if current == home:
                    continue
                for number, position in entries:
                    if number in seen:
                        continue
                    seen.add(number)
                    other, other_holder = indexed[number]
                    other_size = len(other)
                    # Keys are probed in the order of their last item, so this key holds
                    # the pair's first k shared items in rank order: only the items from
                    # here on in either set can still be shared.
                    if min(size - at, other_size - position) + k - 1 < need[other_size]:
                        continue
                    shared = len(items & other)
                    if shared >= min_shared and shared / (size + other_size - shared) >= threshold:
                        components.union(holder, other_holder)
                        home = find(holder)
                        break  # the rest of this bucket is now in the holder's component
            for root in stale:
                buckets.setdefault(find(root), []).extend(buckets.pop(root))
        indexed_prefix = size - _min_overlap(2 * ratio * size, min_shared) + k
        for position, key in _keys(tokens, indexed_prefix, k):
            inverted[key].setdefault(find(holder), []).append((len(indexed), position))
        indexed.append((items, holder))


def _keys(tokens: Sequence[int], prefix: int, k: int) -> Iterator[tuple[int, tuple[int, ...]]]:
    """The prefix's keys with the position of their last item, in the order of that
    item, then of the first: single items (k = 1) or pairs (k = 2)."""
    if k == 1:
        for at, token in enumerate(tokens[:prefix]):
            yield at, (token,)
        return
    for last in range(1, min(prefix, len(tokens))):
        for first in range(last):
            yield last, (tokens[first], tokens[last])


def _groups(runs: Sequence[RunFacts], components: _UnionFind) -> list[Group]:
    members: dict[int, list[RunFacts]] = defaultdict(list)
    for position, run in enumerate(runs):
        members[components.find(position)].append(run)
    groups: list[Group] = []
    for component in members.values():
        component_runs = tuple(sorted(run.run_id for run in component))
        support = [run for run in component if run.stance in SUPPORT_CLAIMS]
        dispute = [run for run in component if run.stance == "dispute"]
        for kind, chosen in (("support", support), ("dispute", dispute)):
            if chosen:
                groups.append(_group(kind, chosen, component_runs))
    groups.sort(key=lambda group: (group.kind, group.runs))
    return groups


def _group(kind: str, runs: Sequence[RunFacts], component_runs: tuple[str, ...]) -> Group:
    run_ids = tuple(sorted(run.run_id for run in runs))
    return Group(
        id=_group_id(kind, run_ids),
        kind=kind,
        runs=run_ids,
        providers=tuple(sorted({run.provider for run in runs})),
        max_confidence=max(run.confidence for run in runs),
        component_runs=component_runs,
    )


def _group_id(kind: str, run_ids: Sequence[str]) -> str:
    return "g-" + sha256_text(f"{kind}:" + ",".join(sorted(run_ids)))[:16]
