"""The output check (docs/architecture.md §7): every reference and limit of a run's
output, against what the ledger read for it, before anything is written.

Pure. The ledger reads the rows the output names (:func:`references` says which)
into a :class:`Known`, then :func:`check` raises on the first problem: BadInput with
a one-line reason, NotFound for an unknown or foreign id, each prefixed with its
place in the output (``claims[2].node_version_id: …``) for the re-prompt.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar
from uuid import UUID

from council.domain import source as sources
from council.domain import validate as v
from council.domain.agent_output import (
    AgentOutput,
    CitationOut,
    EdgeBetween,
    EdgeOut,
    NewNode,
    review_problem,
)
from council.domain.ids import parse_id
from council.domain.protocol import unjudged_reason
from council.domain.votes import ProposalFacts, check_vote
from council.errors import BadInput, NotFound

REF = "ref:"


@dataclass(frozen=True)
class OutputRun:
    """The run whose output is checked (its row as the writer fenced it)."""

    id: UUID
    thread_id: UUID
    mode: str | None = None
    proposal_id: UUID | None = None  # a review run's proposal


@dataclass(frozen=True)
class ClaimTarget:
    """A node version a claim names, with this run's relation to it."""

    thread_id: UUID
    created_by_run_id: UUID | None
    claimed_by_this_run: str | None  # the type of the claim this run already has on it


@dataclass(frozen=True)
class BranchFacts:
    thread_id: UUID
    status: str


@dataclass(frozen=True)
class VersionFacts:
    thread_id: UUID
    branch_id: UUID
    logical_node_id: UUID | None = None


@dataclass(frozen=True)
class References:
    """The ids an output names that parse (malformed ones are refused by :func:`check`,
    in their turn), for the ledger to read in as few queries as it can."""

    proposals: tuple[UUID, ...]
    claimed_versions: tuple[UUID, ...]
    branches: tuple[UUID, ...]
    needs_main_branch: bool
    logical_nodes: tuple[UUID, ...]
    versions: tuple[UUID, ...]  # edge targets, fork points, pending actions' versions
    fork_points: tuple[UUID, ...]  # the versions forks diverge at (their branches are the parents)
    evidence: tuple[UUID, ...]


@dataclass(frozen=True)
class Known:
    """What the ledger found of the output's references; an id missing from a map names no row."""

    main_branch_id: UUID | None  # the thread's main branch, when the output needs it
    proposals: Mapping[UUID, ProposalFacts]
    claimed_versions: Mapping[UUID, ClaimTarget]
    branches: Mapping[UUID, BranchFacts]  # those named, the main one, and forks' parents
    logical_nodes: Mapping[UUID, UUID]  # id -> its thread
    versions: Mapping[UUID, VersionFacts]
    attached_evidence: frozenset[UUID]  # the cited evidence attached to the thread
    # A council's cross-review run: the propositions it was shown that its own lineage did
    # not originate, each of which it must judge (council.domain.protocol.to_judge).
    must_judge: tuple[UUID, ...] = ()


_Row = TypeVar("_Row", ClaimTarget, BranchFacts, VersionFacts)


def references(output: AgentOutput) -> References:
    """Which rows the check needs: the ids the output names, in first-seen order."""
    edges = [
        *(edge for node in output.new_nodes for edge in node.edges),
        *(edge for version in output.new_versions for edge in version.edges),
    ]
    versions = [
        *(edge.to for edge in edges if ref_of(edge) is None),
        *(end for edge in output.edges for end in (edge.node_version_id, edge.to)),
        *(fork.at_version_id for fork in output.forks if fork.at_version_id is not None),
        *(a.node_version_id for a in output.pending_actions if a.node_version_id is not None),
    ]
    return References(
        proposals=_ids(vote.proposal_id for vote in output.votes),
        claimed_versions=_ids(claim.node_version_id for claim in output.claims),
        branches=_ids(node.branch_id for node in output.new_nodes if node.branch_id),
        needs_main_branch=any(not node.branch_id for node in output.new_nodes)
        or any(fork.at_version_id is None for fork in output.forks),
        logical_nodes=_ids(version.logical_node_id for version in output.new_versions),
        versions=_ids(versions),
        fork_points=_ids(fork.at_version_id for fork in output.forks),
        evidence=_ids(
            str(cite.evidence_id)
            for _, cites in citation_lists(output)
            for cite in cites
            if cite.new_evidence is None
        ),
    )


def check(output: AgentOutput, run: OutputRun, known: Known) -> None:
    """Raise on the first problem of ``output``; the checks run in the order of the output's parts."""
    thread_id = run.thread_id
    _check_no_nul(output.model_dump(), "")
    if run.mode == "review":
        problem = review_problem(output, str(run.proposal_id))
        if problem is not None:
            where, reason = problem
            raise BadInput(f"{where}: {reason}")
    refs = {node.ref for node in creation_order(output.new_nodes)}
    _check_votes(output, run, known)
    _check_claims(output, run, known)
    _check_judged(output, known)
    for i, node in enumerate(output.new_nodes):
        with at(f"new_nodes[{i}].branch_id"):
            branch_id = parse_id(node.branch_id, "branch") if node.branch_id else _main(known)
            branch = _in_thread(known.branches, branch_id, thread_id, "branch")
            if branch.status != "active":
                raise BadInput(f"branch {branch_id} is {branch.status}; new nodes go on an active branch")
        _check_edges(known, thread_id, node.edges, refs, f"new_nodes[{i}]")
    seen: set[UUID] = set()
    for i, version in enumerate(output.new_versions):
        with at(f"new_versions[{i}].logical_node_id"):
            node_id = parse_id(version.logical_node_id, "logical node")
            if node_id in seen:
                raise BadInput(f"a second new version of logical node {node_id} (one per output)")
            seen.add(node_id)
            if node_id not in known.logical_nodes:
                raise NotFound(f"no logical node with id {node_id}")
            if known.logical_nodes[node_id] != thread_id:
                raise NotFound(f"logical node {node_id} belongs to another thread")
        _check_edges(known, thread_id, version.edges, refs, f"new_versions[{i}]")
    for i, fork in enumerate(output.forks):
        with at(f"forks[{i}]"):
            _check_fork(known, thread_id, fork.kind, fork.objective, fork.at_version_id)
    for i, action in enumerate(output.pending_actions):
        with at(f"pending_actions[{i}].node_version_id"):
            if (version_id := optional_version(action.node_version_id)) is not None:
                _in_thread(known.versions, version_id, thread_id, "node version")
    _check_edges_between(known, thread_id, output.edges, refs)
    _check_citations(output, known)


def creation_order(new_nodes: Sequence[NewNode]) -> list[NewNode]:
    """New nodes ordered so that every ``ref:`` edge points at a node made
    before it. Edges only ever point at existing versions, so refs must be
    known and acyclic (the graph stays a DAG)."""
    refs = {node.ref for node in new_nodes}
    needs: dict[str, set[str]] = {}
    for i, node in enumerate(new_nodes):
        needs[node.ref] = set()
        for j, edge in enumerate(node.edges):
            target = ref_of(edge)
            if target is None:
                continue
            if target not in refs:
                raise BadInput(f"new_nodes[{i}].edges[{j}]: no new node in this output has ref {target!r}")
            if target == node.ref:
                raise BadInput(f"new_nodes[{i}].edges[{j}]: a node cannot have an edge to itself")
            needs[node.ref].add(target)
    ordered: list[NewNode] = []
    done: set[str] = set()
    while len(ordered) < len(new_nodes):
        ready = [node for node in new_nodes if node.ref not in done and needs[node.ref] <= done]
        if not ready:
            stuck = ", ".join(node.ref for node in new_nodes if node.ref not in done)
            raise BadInput(f"new_nodes: edges between new nodes form a cycle (among {stuck})")
        ordered.extend(ready)
        done.update(node.ref for node in ready)
    return ordered


def citation_lists(output: AgentOutput) -> Iterator[tuple[str, Sequence[CitationOut]]]:
    for i, claim in enumerate(output.claims):
        yield f"claims[{i}]", claim.cites
    for i, node in enumerate(output.new_nodes):
        yield f"new_nodes[{i}]", node.cites
    for i, version in enumerate(output.new_versions):
        yield f"new_versions[{i}]", version.cites


def ref_of(edge: EdgeOut) -> str | None:
    """The new node's ref a ``ref:`` edge points at; None for an edge to an existing version."""
    return ref_of_text(edge.to)


def optional_version(value: str | None) -> UUID | None:
    return None if value is None else existing_version(value)


def existing_version(value: str) -> UUID:
    if value.startswith(REF):
        raise BadInput(f"{value} is a new node of this output; only edges may name it")
    return parse_id(value, "node version")


@contextmanager
def at(where: str) -> Iterator[None]:
    """Prefix a reason with its place in the output."""
    try:
        yield
    except BadInput as exc:
        raise type(exc)(f"{where}: {exc}") from None


def _check_votes(output: AgentOutput, run: OutputRun, known: Known) -> None:
    """A run votes only on the proposal it was dispatched to review, once, while it is open."""
    for i, vote in enumerate(output.votes):
        with at(f"votes[{i}].proposal_id"):
            proposal_id = parse_id(vote.proposal_id, "retraction proposal")
            check_vote(run.id, run.thread_id, proposal_id, known.proposals.get(proposal_id))
            if run.mode != "review" or run.proposal_id != proposal_id:
                raise BadInput(
                    f"this run was not dispatched to review proposal {proposal_id}; "
                    "a run votes only on the proposal of its review dispatch"
                )


def _check_claims(output: AgentOutput, run: OutputRun, known: Known) -> None:
    targets: list[UUID] = []
    for i, claim in enumerate(output.claims):
        with at(f"claims[{i}].node_version_id"):
            version_id = existing_version(claim.node_version_id)
            if version_id in targets:
                raise BadInput(f"a second claim on node version {version_id} (one claim per version)")
            targets.append(version_id)
    with at("claims"):
        for version_id in targets:
            _in_thread(known.claimed_versions, version_id, run.thread_id, "node version")
    for i, version_id in enumerate(targets):
        with at(f"claims[{i}]"):
            target = known.claimed_versions[version_id]
            if target.created_by_run_id == run.id:
                raise BadInput(f"node version {version_id} was created by this run; it cannot claim on it")
            if (already := target.claimed_by_this_run) is not None:
                raise BadInput(f"this run already claimed ({already}) on node version {version_id}")


def _check_judged(output: AgentOutput, known: Known) -> None:
    """A cross-review run judges every proposition it did not originate (the re-prompt names
    the versions it left out)."""
    if not known.must_judge:
        return
    judged = set(_ids(claim.node_version_id for claim in output.claims))
    missing = [str(v) for v in known.must_judge if v not in judged]
    if missing:
        raise BadInput(f"claims: {unjudged_reason(missing)}")


def _check_edges(known: Known, thread_id: UUID, edges: Sequence[EdgeOut], refs: set[str], where: str) -> None:
    targets: list[UUID] = []
    for j, edge in enumerate(edges):
        with at(f"{where}.edges[{j}].to"):
            target = ref_of(edge)
            if target is None:
                targets.append(parse_id(edge.to, "node version"))
            elif target not in refs:
                raise BadInput(f"no new node in this output has ref {target!r}")
    with at(f"{where}.edges"):
        v.count(edges, "edges")
        for version_id in targets:
            _in_thread(known.versions, version_id, thread_id, "node version")


def _check_edges_between(known: Known, thread_id: UUID, edges: Sequence[EdgeBetween], refs: set[str]) -> None:
    """Edges between versions: each end a version of this thread (the start may be a new
    node's ``ref:``), never a version to itself nor two versions of one node."""
    for i, edge in enumerate(edges):
        with at(f"edges[{i}].node_version_id"):
            start = ref_of_text(edge.node_version_id)
            if start is not None and start not in refs:
                raise BadInput(f"no new node in this output has ref {start!r}")
            source = None if start is not None else parse_id(edge.node_version_id, "node version")
            if source is not None:
                _in_thread(known.versions, source, thread_id, "node version")
        with at(f"edges[{i}].to"):
            if edge.to.startswith(REF):
                raise BadInput(
                    "ends at an existing version; an edge to a new node goes on that node (its edges)"
                )
            target = parse_id(edge.to, "node version")
            found = _in_thread(known.versions, target, thread_id, "node version")
            if source == target:
                raise BadInput(f"an edge from node version {target} to itself")
            node = None if source is None else known.versions[source].logical_node_id
            if node is not None and node == found.logical_node_id:
                raise BadInput(f"node versions {source} and {target} are versions of one node")


def ref_of_text(value: str) -> str | None:
    """The new node's ref ``ref:<ref>`` names; None for an id."""
    return value[len(REF) :] if value.startswith(REF) else None


def _check_fork(
    known: Known, thread_id: UUID, kind: str, objective: str | None, at_version_id: str | None
) -> None:
    if kind == "objective":
        if objective is None:
            raise BadInput("an objective fork needs an objective")
        v.text(objective, "objective", v.MAX_OBJECTIVE)
    elif objective is not None:
        raise BadInput("only an objective fork carries an objective")
    if kind == "node" and at_version_id is None:
        raise BadInput("a node fork needs at_version_id, the version it diverges at")
    fork_at = optional_version(at_version_id)
    if fork_at is None:
        parent_id = _main(known)
    else:
        parent_id = _in_thread(known.versions, fork_at, thread_id, "node version").branch_id
    parent = known.branches.get(parent_id)
    if parent is None:
        raise NotFound(f"no branch with id {parent_id}")
    if parent.status != "active":
        raise BadInput(f"branch {parent_id} is {parent.status}; fork from an active branch")


def _check_citations(output: AgentOutput, known: Known) -> None:
    existing: list[tuple[str, list[UUID]]] = []
    for where, cites in citation_lists(output):
        ids: list[UUID] = []
        for j, cite in enumerate(cites):
            with at(f"{where}.cites[{j}]"):
                if cite.new_evidence is None:
                    ids.append(parse_id(str(cite.evidence_id), "evidence"))
                else:
                    sources.checked_size(sources.from_text(cite.new_evidence.content))
                    v.text(cite.new_evidence.title, "title", v.MAX_TITLE)
        with at(f"{where}.cites"):
            v.count(cites, "citations")
        existing.append((where, ids))
    for where, ids in existing:
        with at(f"{where}.cites"):
            missing = [str(e) for e in ids if e not in known.attached_evidence]
            if missing:
                raise NotFound(f"no evidence {missing[0]} in this thread")


def _check_no_nul(value: object, where: str) -> None:
    """Postgres text cannot hold NUL, and JSON can: refuse it up front."""
    if isinstance(value, str) and "\x00" in value:
        raise BadInput(f"{where}: contains a NUL character")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_no_nul(item, f"{where}.{key}" if where else key)
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_no_nul(item, f"{where}[{i}]")


def _in_thread(rows: Mapping[UUID, _Row], row_id: UUID, thread_id: UUID, what: str) -> _Row:
    """The row, or NotFound: an unknown id, or one of another thread."""
    row = rows.get(row_id)
    if row is None:
        raise NotFound(f"no {what} with id {row_id}")
    if row.thread_id != thread_id:
        raise NotFound(f"{what} {row_id} belongs to another thread")
    return row


def _main(known: Known) -> UUID:
    if known.main_branch_id is None:
        raise RuntimeError("the output check needs the thread's main branch, and it was not read")
    return known.main_branch_id


def _ids(values: Iterable[str | None]) -> tuple[UUID, ...]:
    found: dict[UUID, None] = {}
    for value in values:
        if value is not None and not value.startswith(REF):
            try:
                found.setdefault(parse_id(value, "id"), None)
            except BadInput:
                continue  # refused in its turn by the check, with its place
    return tuple(found)
