"""Exclusive alternatives (docs/architecture.md §4): what a node's rivals change in its decision.

Pure. Some propositions cannot both hold: the options of one question and nodes joined by a
``contradicts`` edge form an *alternative set*. Under a rule set with
``exclusive_alternatives`` (council-default-v3):

- an endorsement of one alternative counts as a dispute of each rival. It is derived here,
  at evaluation, never written as a claim: a run that supported (originated or endorsed) a
  rival and took no stance of its own on the node joins the node's runs with the stance
  ``dispute`` and the highest confidence it gave a rival, so it is grouped as a dispute
  would be (an independent, confident rival endorsement blocks as a dispute does). Its
  citations are those it made on the rival it supported;
- each alternative's *support* is measured the same way — its groups with the disputes its
  own rivals' supporters give it — as independent support groups, or as ``n_eff`` under
  ``min_effective_support``;
- a node consolidates only when its support beats every rival's by ``min_rival_margin``
  (0 when absent) and no rival holds a live consolidation.

A rival whose head was killed or orphaned is out of the contest (its endorsers dispute
nothing, its support is not compared); one with a live consolidation is not, whatever its
head's status. The node's own stance of a run wins over a derived one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from council.domain import validate as v
from council.domain.effective import group_n_eff
from council.domain.independence import Group, GroupingParams, RunFacts, group_many
from council.domain.snapshot_shapes import (
    Snapshot,
    SnapshotCitation,
    SnapshotClaim,
    SnapshotExposure,
    SnapshotRun,
)
from council.errors import BadInput

T = TypeVar("T")
SUPPORT = frozenset({"originate", "endorse"})
OUT_OF_CONTEST = frozenset({"killed", "orphaned"})
SHORT = 8  # hex digits of a rival's version id in a reason


@dataclass(frozen=True)
class Member:
    """One alternative as evaluation needs it: its runs' facts on it (its own stances)."""

    version_id: str
    facts: tuple[RunFacts, ...]  # one per run that claimed on it
    in_contest: bool = True
    live: str | None = None  # its node's live consolidation, if any


@dataclass(frozen=True)
class Rival:
    """A rival of the node decided, measured."""

    version_id: str
    groups: tuple[Group, ...]  # its groups, its own rivals' supporters counted as disputes
    in_contest: bool
    live: str | None


@dataclass(frozen=True)
class Contest:
    """The node's side of the contest: its groups with derived disputes, and its rivals."""

    groups: tuple[Group, ...]
    derived: tuple[str, ...]  # runs whose dispute was derived from a rival's endorsement
    rivals: tuple[Rival, ...]


def derived_facts(member: Member, others: Iterable[Member]) -> list[RunFacts]:
    """``member``'s runs, with a derived dispute for every run that supported another
    alternative in contest and took no stance of its own on ``member``."""
    own = {f.run_id for f in member.facts}
    derived: dict[str, RunFacts] = {}
    for other in others:
        if not other.in_contest:
            continue
        for fact in other.facts:
            if fact.stance not in SUPPORT or fact.run_id in own:
                continue
            held = derived.get(fact.run_id)
            if held is None or fact.confidence > held.confidence:
                derived[fact.run_id] = RunFacts(
                    run_id=fact.run_id,
                    provider=fact.provider,
                    stance="dispute",
                    confidence=fact.confidence,
                    parent_run_id=fact.parent_run_id,
                    exposed_to=fact.exposed_to,
                    input_features=fact.input_features,
                    cited_evidence=fact.cited_evidence,
                )
    return [*member.facts, *(derived[r] for r in sorted(derived))]


def contest(node: Member, rivals: Sequence[Member], params: GroupingParams) -> Contest:
    """The node's groups and each rival's, every alternative's rivals' supporters counted
    as its disputes (computed once; the rules then measure and compare them)."""
    return contests([node, *rivals], params)[node.version_id]


def contests(members: Sequence[Member], params: GroupingParams) -> dict[str, Contest]:
    """Each member of one alternative set with its contest against all the others: every
    member's groups computed once, and once only the components its runs form when every
    member has the same runs (an imported record: each turn supports one option, or
    abstains on every one) — ``independence.group_many``."""
    facts = [derived_facts(m, [o for o in members if o is not m]) for m in members]
    grouped = dict(zip((m.version_id for m in members), group_many(facts, params), strict=True))
    found = {}
    for member, own in zip(members, facts, strict=True):
        mine = {f.run_id for f in member.facts}
        rivals = tuple(
            Rival(r.version_id, tuple(grouped[r.version_id]), r.in_contest, r.live)
            for r in members
            if r is not member
        )
        found[member.version_id] = Contest(
            groups=tuple(grouped[member.version_id]),
            derived=tuple(f.run_id for f in own if f.run_id not in mine),
            rivals=rivals,
        )
    return found


def support(groups: Iterable[Group], models: Mapping[str, str] | None, correlations: object) -> float:
    """An alternative's independent support: its support groups, or (``models`` given:
    under min_effective_support) their n_eff over the correlation table."""
    backing = [g for g in groups if g.kind == "support"]
    if models is None:
        return float(len(backing))
    table = correlations if isinstance(correlations, list) else []
    return group_n_eff([[models.get(run, run) for run in g.runs] for g in backing], table)


def short(version_id: str) -> str:
    return version_id[:SHORT]


# ------------------------------------------------------------- from a snapshot


def facts_of(
    claims: Sequence[SnapshotClaim],
    runs: Sequence[SnapshotRun],
    exposures: Sequence[SnapshotExposure],
    citations: Sequence[SnapshotCitation],
) -> tuple[RunFacts, ...]:
    """One RunFacts per run that claimed (the node's own stances), as rules.run_facts reads them."""
    by_id = {r["id"]: r for r in runs}
    exposed: dict[str, set[str]] = {}
    for e in exposures:
        if e["exposed_to_run_id"] is not None:
            exposed.setdefault(e["run_id"], set()).add(e["exposed_to_run_id"])
    cited: dict[str, set[str]] = {}
    for c in citations:
        if c["run_id"] is not None:
            cited.setdefault(c["run_id"], set()).add(c["evidence_id"])
    return tuple(
        RunFacts(
            run_id=claim["run_id"],
            provider=by_id[claim["run_id"]]["provider"],
            stance=claim["type"],
            confidence=float(claim["confidence"]),
            parent_run_id=by_id[claim["run_id"]]["parent_run_id"],
            exposed_to=frozenset(exposed.get(claim["run_id"], ())),
            input_features=frozenset(by_id[claim["run_id"]]["input_features"]),
            cited_evidence=frozenset(cited.get(claim["run_id"], ())),
        )
        for claim in claims
    )


def members_of(snapshot: Snapshot) -> tuple[Member, list[Member]]:
    """The node and its rivals as a v4 snapshot records them."""
    node = Member(
        snapshot["node"]["version_id"],
        facts_of(snapshot["claims"], snapshot["runs"], snapshot["exposures"], snapshot["citations"]),
    )
    rivals = [
        Member(
            r["version_id"],
            facts_of(r["claims"], r["runs"], r["exposures"], r["citations"]),
            in_contest=r["status"] not in OUT_OF_CONTEST or r["consolidation"] is not None,
            live=None if r["consolidation"] is None else r["consolidation"]["id"],
        )
        for r in snapshot.get("rivals", [])
    ]
    return node, rivals


def snapshot_models(snapshot: Snapshot) -> dict[str, str]:
    """Each run's model (else its agent), the node's runs and its rivals'."""
    runs = [*snapshot["runs"], *(run for r in snapshot.get("rivals", []) for run in r["runs"])]
    return {r["id"]: r.get("model") or r["agent"] for r in runs}


def one_per_set(decided: Sequence[tuple[T, Snapshot]]) -> tuple[list[T], list[T]]:
    """Of positive decisions made in one view of the data (each with its snapshot), those
    kept — at most one per alternative set: a v4 snapshot names its rivals' logical
    nodes — and those left to be decided again once the kept one is written."""
    kept: list[T] = []
    left: list[T] = []
    taken: set[str] = set()
    for item, snapshot in decided:
        members = {
            snapshot["node"]["logical_node_id"],
            *(r["logical_node_id"] for r in snapshot.get("rivals", [])),
        }
        if members & taken:
            left.append(item)
        else:
            taken |= members
            kept.append(item)
    return kept, left


# ------------------------------------------------------------- sets from their links


def components(links: Iterable[tuple[str, str]], nodes: Iterable[str]) -> list[frozenset[str]]:
    """The alternative sets that ``links`` make among ``nodes`` (logical node ids): the
    connected components with two or more of them, each sorted into a frozenset, in the
    order of their smallest member. A link may name a vertex that is no node (an option
    set joins its options): it joins, and is left out of the sets."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in links:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    found: dict[str, set[str]] = {}
    for node in set(nodes):
        found.setdefault(find(node), set()).add(node)
    return sorted((frozenset(m) for m in found.values() if len(m) > 1), key=min)


def joined_live(ends: Iterable[tuple[str, str]], sets: Mapping[str, tuple[str, frozenset[str]]]) -> list[str]:
    """The live alternatives that would share one set once edges ``ends`` (pairs of logical
    nodes) are written, given each end's set now (``sets``: node → (set name, its members
    holding a live consolidation)): empty when every set after the write has at most one."""
    names = {node: name for node, (name, _) in sets.items()}
    merged = components(((names[a], names[b]) for a, b in ends), names.values())
    live_of: dict[str, set[str]] = {}
    for name, live in sets.values():
        live_of.setdefault(name, set()).update(live)
    for group in merged:
        together = sorted(set().union(*(live_of.get(name, set()) for name in group)))
        if len(together) > 1:
            return together
    return []


# ------------------------------------------------------------- a question's options

MAX_OPTIONS = 100
MAX_LABEL = 100
ASKED, IMPORTED = "ask", "import"  # what made an option set (option_sets.origin)


def parse_options(specs: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``LABEL=TEXT`` options of a multiple-choice question (``ask --option``), in order:
    at least two, labels distinct (after trimming, ignoring case) and at most 100
    characters, texts non-empty. Anything else is bad input, naming the option."""
    if not specs:
        return ()
    if len(specs) < 2 or len(specs) > MAX_OPTIONS:
        raise BadInput(
            f"a multiple-choice question takes 2 to {MAX_OPTIONS} --option LABEL=TEXT, got {len(specs)}"
        )
    options: list[tuple[str, str]] = []
    seen: set[str] = set()
    for spec in specs:
        label, sep, text = spec.partition("=")
        label = label.strip()
        if not sep:
            raise BadInput(f"invalid --option {spec[:60]!r}: expected LABEL=TEXT")
        if not label or len(label) > MAX_LABEL:
            raise BadInput(f"invalid --option {spec[:60]!r}: the label must be 1 to {MAX_LABEL} characters")
        if label.casefold() in seen:
            raise BadInput(f"--option label {label!r} is given twice")
        if not text.strip():
            raise BadInput(f"--option {label!r} has no text")
        seen.add(label.casefold())
        options.append((label, v.text(text, f"--option {label}", v.MAX_CONTENT - MAX_LABEL - 2)))
    return tuple(options)


def option_content(label: str, text: str) -> str:
    """An option's proposition as its node holds it (as an imported labelled option's)."""
    return f"{label}: {text}"
