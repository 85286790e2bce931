"""Applying a run's output to the ledger (docs/architecture.md §7).

:func:`check_output` looks at every reference and limit before anything is
written; :func:`apply_output` then writes it all in the caller's transaction,
so a failure anywhere leaves nothing behind. Reasons are one line and name the
place in the output (``claims[2].node_version_id: …``) for the re-prompt.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from sqlalchemy import Connection

from council.domain import commands
from council.domain import source as sources
from council.domain import validate as v
from council.domain.agent_output import AgentOutput, CitationOut, EdgeOut, NewNode, review_problem
from council.domain.commands import Cite
from council.domain.ids import parse_id
from council.domain.results.runs import Applied
from council.errors import BadInput, NotFound
from council.ledger import events, evidence, retraction
from council.ledger import tables as t
from council.ledger.actions import Actions
from council.ledger.branches import Branches
from council.ledger.citations import attached_evidence, require_attached
from council.ledger.claims import write_checked_claims
from council.ledger.lookup import require, require_all_in_thread, require_in_thread, require_same_thread
from council.ledger.nodes import Nodes
from council.ledger.pg import in_transaction
from council.ledger.threads import main_branch_id

REF = "ref:"


def check_output(conn: Connection, run: Mapping[Any, Any], output: AgentOutput) -> dict[UUID, Any]:
    """Raise BadInput with a one-line reason on the first problem; writes nothing.
    ``run`` is the run's row as read in this transaction (the writer's fenced
    row), so it is not looked up again. Returns the node versions the claims are
    on (their rows, by id)."""
    thread_id = run["thread_id"]
    _check_no_nul(output.model_dump(), "")
    if run.get("mode") == "review":
        _check_review(run, output)
    refs = {node.ref for node in _creation_order(output.new_nodes)}
    _check_votes(conn, run, output)
    claimed = _check_claims(conn, run, output)
    for i, node in enumerate(output.new_nodes):
        with _at(f"new_nodes[{i}].branch_id"):
            branch_id = (
                parse_id(node.branch_id, "branch") if node.branch_id else main_branch_id(conn, thread_id)
            )
            branch = require_in_thread(conn, t.branches, branch_id, thread_id, "branch")
            if branch["status"] != "active":
                raise BadInput(f"branch {branch_id} is {branch['status']}; new nodes go on an active branch")
        _check_edges(conn, thread_id, node.edges, refs, f"new_nodes[{i}]")
    seen: set[UUID] = set()
    for i, version in enumerate(output.new_versions):
        with _at(f"new_versions[{i}].logical_node_id"):
            node_id = parse_id(version.logical_node_id, "logical node")
            if node_id in seen:
                raise BadInput(f"a second new version of logical node {node_id} (one per output)")
            seen.add(node_id)
            require_in_thread(conn, t.logical_nodes, node_id, thread_id, "logical node")
        _check_edges(conn, thread_id, version.edges, refs, f"new_versions[{i}]")
    for i, fork in enumerate(output.forks):
        with _at(f"forks[{i}]"):
            _check_fork(conn, thread_id, fork.kind, fork.objective, fork.at_version_id)
    for i, action in enumerate(output.pending_actions):
        with _at(f"pending_actions[{i}].node_version_id"):
            if (version_id := _optional_version(action.node_version_id)) is not None:
                require_in_thread(conn, t.node_versions, version_id, thread_id, "node version")
    _check_citations(conn, thread_id, output)
    return claimed


def apply_output(
    conn: Connection,
    run: Mapping[Any, Any],
    output: AgentOutput,
    *,
    actor: str,
    later: list[dict[str, Any]] | None = None,
) -> Applied:
    """Check, then write everything in ``conn``'s transaction (new nodes are
    originated by the run; ``ref:`` edges point at the versions made here).
    ``later``: the claim.added and run.output_applied events are handed to it
    (kind, actor, payload, a claim's subject) for the caller to append with the
    run's end, in the same transaction and order, instead of being appended here."""
    claimed_versions = check_output(conn, run, output)
    run_id, thread_id = run["id"], run["thread_id"]
    votes = [
        retraction.record_vote(
            conn,
            parse_id(vote.proposal_id, "retraction proposal"),
            run_id,
            choice=vote.vote,
            confidence=vote.confidence,
            rationale=vote.rationale,
            actor=actor,
        ).id
        for vote in output.votes
    ]
    added: list[UUID] = []
    made: dict[str, UUID] = {}
    node_store, branch_store, action_store = Nodes(conn), Branches(conn), Actions(conn)
    for node in _creation_order(output.new_nodes):
        made[node.ref] = node_store.add(
            commands.NewNode(
                thread=thread_id,
                content=node.content,
                status=node.status,
                branch=parse_id(node.branch_id, "branch") if node.branch_id else None,
                edges=tuple(_edges(node.edges, made)),
                cites=tuple(_cites(conn, thread_id, node.cites, actor, added)),
                run=run_id,
            ),
            actor=actor,
            held=True,
        ).version_id
    versions = [
        node_store.add_version(
            commands.NewVersion(
                logical_node=parse_id(version.logical_node_id, "logical node"),
                content=version.content,
                status=version.status,
                edges=tuple(_edges(version.edges, made)),
                cites=tuple(_cites(conn, thread_id, version.cites, actor, added)),
                run=run_id,
            ),
            actor=actor,
        ).version_id
        for version in output.new_versions
    ]
    claimed = [parse_id(claim.node_version_id, "node version") for claim in output.claims]
    new_claims = [
        commands.NewClaim(
            version_id,
            claim.type,
            claim.confidence,
            claim.rationale,
            tuple(_cites(conn, thread_id, claim.cites, actor, added)),
        )
        for claim, version_id in zip(output.claims, claimed, strict=True)
    ]
    claim_ids = [
        row.id
        for row in write_checked_claims(
            conn, run=run, claims=new_claims, versions=claimed_versions, actor=actor, later=later
        )
    ]
    forks = [
        branch_store.fork(
            commands.NewFork(
                thread=thread_id,
                kind=fork.kind,
                label=fork.label,
                divergence_type=fork.divergence_type,
                objective=fork.objective,
                parent_branch=_fork_parent(conn, thread_id, _optional_version(fork.at_version_id)),
                at_version=_optional_version(fork.at_version_id),
                run=run_id,
            ),
            actor=actor,
        ).id
        for fork in output.forks
    ]
    pending = [
        action_store.add(
            commands.NewAction(
                thread=thread_id,
                description=action.description,
                acceptance_condition=action.acceptance_condition,
                version=_optional_version(action.node_version_id),
                run=run_id,
            ),
            actor=actor,
        ).id
        for action in output.pending_actions
    ]
    result: dict[str, Any] = {
        "claims": claim_ids,
        "nodes": [made[node.ref] for node in output.new_nodes],
        "versions": versions,
        "evidence": list(dict.fromkeys(added)),
        "forks": forks,
        "pending_actions": pending,
    }
    if votes:  # only review runs vote; other outputs keep their result and event shape
        result["votes"] = votes
    result["touched_versions"] = list(dict.fromkeys([*claimed, *result["nodes"], *versions]))
    summary = {key: len(ids) for key, ids in result.items()}
    if later is not None:
        later.append({"kind": "run.output_applied", "actor": actor, "payload": summary})
    else:
        events.append(
            conn, "run.output_applied", actor=actor, thread_id=thread_id, subject_id=run_id, payload=summary
        )
    return Applied.model_validate(result)


def _creation_order(new_nodes: Sequence[NewNode]) -> list[NewNode]:
    """New nodes ordered so that every ``ref:`` edge points at a node made
    before it. Edges only ever point at existing versions, so refs must be
    known and acyclic (the graph stays a DAG)."""
    refs = {node.ref for node in new_nodes}
    needs: dict[str, set[str]] = {}
    for i, node in enumerate(new_nodes):
        needs[node.ref] = set()
        for j, edge in enumerate(node.edges):
            target = _ref(edge)
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


def _check_review(run: Mapping[Any, Any], output: AgentOutput) -> None:
    """A review run's answer is its vote on its own proposal and nothing else."""
    problem = review_problem(output, str(run.get("proposal_id")))
    if problem is not None:
        where, reason = problem
        raise BadInput(f"{where}: {reason}")


def _check_votes(conn: Connection, run: Mapping[Any, Any], output: AgentOutput) -> None:
    """A run votes only on the proposal it was dispatched to review, once, while it is open."""
    for i, vote in enumerate(output.votes):
        with _at(f"votes[{i}].proposal_id"):
            proposal_id = parse_id(vote.proposal_id, "retraction proposal")
            retraction.check_vote(conn, proposal_id, run)
            if run.get("mode") != "review" or run.get("proposal_id") != proposal_id:
                raise BadInput(
                    f"this run was not dispatched to review proposal {proposal_id}; "
                    "a run votes only on the proposal of its review dispatch"
                )


def _check_claims(conn: Connection, run: Mapping[Any, Any], output: AgentOutput) -> dict[UUID, Any]:
    targets: list[UUID] = []
    for i, claim in enumerate(output.claims):
        with _at(f"claims[{i}].node_version_id"):
            version_id = _existing_version(claim.node_version_id)
            if version_id in targets:
                raise BadInput(f"a second claim on node version {version_id} (one claim per version)")
            targets.append(version_id)
    with _at("claims"):
        found = _claimable(conn, run["id"], targets, run["thread_id"])
    for i, version_id in enumerate(targets):
        with _at(f"claims[{i}]"):
            if found[version_id]["created_by_run_id"] == run["id"]:
                raise BadInput(f"node version {version_id} was created by this run; it cannot claim on it")
            if (already := found[version_id]["claimed_by_this_run"]) is not None:
                raise BadInput(f"this run already claimed ({already}) on node version {version_id}")
    return found


def _claimable(
    conn: Connection, run_id: UUID, version_ids: Sequence[UUID], thread_id: UUID
) -> dict[UUID, Any]:
    """The claimed versions' rows by id, each with the type of the claim this run already
    has on it (``claimed_by_this_run``, None for none), in one query; the first unknown or
    foreign id (in the given order) raises NotFound."""
    if not version_ids:
        return {}
    found = {
        row["id"]: row
        for row in in_transaction(
            conn, "claimable_versions", {"run_id": run_id, "ids": list(set(version_ids))}
        )
    }
    for version_id in version_ids:
        if version_id not in found:
            raise NotFound(f"no node version with id {version_id}")
        require_same_thread(found[version_id], thread_id, "node version")
    return found


def _check_edges(
    conn: Connection, thread_id: UUID, edges: Sequence[EdgeOut], refs: set[str], where: str
) -> None:
    targets: list[UUID] = []
    for j, edge in enumerate(edges):
        with _at(f"{where}.edges[{j}].to"):
            target = _ref(edge)
            if target is None:
                targets.append(parse_id(edge.to, "node version"))
            elif target not in refs:
                raise BadInput(f"no new node in this output has ref {target!r}")
    with _at(f"{where}.edges"):
        v.count(edges, "edges")
        require_all_in_thread(conn, t.node_versions, targets, thread_id, "node version")


def _check_fork(
    conn: Connection, thread_id: UUID, kind: str, objective: str | None, at_version_id: str | None
) -> None:
    if kind == "objective":
        if objective is None:
            raise BadInput("an objective fork needs an objective")
        v.text(objective, "objective", v.MAX_OBJECTIVE)
    elif objective is not None:
        raise BadInput("only an objective fork carries an objective")
    if kind == "node" and at_version_id is None:
        raise BadInput("a node fork needs at_version_id, the version it diverges at")
    parent_id = _fork_parent(conn, thread_id, _optional_version(at_version_id))
    parent = require(conn, t.branches, parent_id, "branch")
    if parent["status"] != "active":
        raise BadInput(f"branch {parent['id']} is {parent['status']}; fork from an active branch")


def _fork_parent(conn: Connection, thread_id: UUID, at: UUID | None) -> UUID:
    """A fork leaves the branch of the version it diverges at (main without one)."""
    if at is None:
        return main_branch_id(conn, thread_id)
    branch_id: UUID = require_in_thread(conn, t.node_versions, at, thread_id, "node version")["branch_id"]
    return branch_id


def _citation_lists(output: AgentOutput) -> Iterator[tuple[str, Sequence[CitationOut]]]:
    for i, claim in enumerate(output.claims):
        yield f"claims[{i}]", claim.cites
    for i, node in enumerate(output.new_nodes):
        yield f"new_nodes[{i}]", node.cites
    for i, version in enumerate(output.new_versions):
        yield f"new_versions[{i}]", version.cites


def _check_citations(conn: Connection, thread_id: UUID, output: AgentOutput) -> None:
    """Every citation list of the output, with one query for all the evidence it names."""
    existing: list[tuple[str, list[UUID]]] = []
    for where, cites in _citation_lists(output):
        ids: list[UUID] = []
        for j, cite in enumerate(cites):
            with _at(f"{where}.cites[{j}]"):
                if cite.new_evidence is None:
                    ids.append(parse_id(str(cite.evidence_id), "evidence"))
                else:
                    evidence.checked_size(sources.from_text(cite.new_evidence.content))
                    v.text(cite.new_evidence.title, "title", v.MAX_TITLE)
        with _at(f"{where}.cites"):
            v.count(cites, "citations")
        existing.append((where, ids))
    attached = attached_evidence(conn, thread_id, [e for _, ids in existing for e in ids])
    for where, ids in existing:
        with _at(f"{where}.cites"):
            require_attached(attached, ids)


def _check_no_nul(value: Any, where: str) -> None:
    """Postgres text cannot hold NUL, and JSON can: refuse it up front."""
    if isinstance(value, str) and "\x00" in value:
        raise BadInput(f"{where}: contains a NUL character")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_no_nul(item, f"{where}.{key}" if where else key)
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_no_nul(item, f"{where}[{i}]")


def _cites(
    conn: Connection, thread_id: UUID, cites: Sequence[CitationOut], actor: str, added: list[UUID]
) -> list[Cite]:
    """Citations to write; new evidence content joins the thread first (same content, same row)."""
    out: list[Cite] = []
    for cite in cites:
        if cite.new_evidence is None:
            evidence_id = parse_id(str(cite.evidence_id), "evidence")
        else:
            evidence_id = evidence.add_evidence(
                conn,
                thread_id=thread_id,
                source=sources.from_text(cite.new_evidence.content),
                title=cite.new_evidence.title,
                actor=actor,
            ).id
            added.append(evidence_id)
        out.append(Cite(evidence_id, cite.role, cite.interpretation))
    return out


def _edges(edges: Sequence[EdgeOut], made: Mapping[str, UUID]) -> list[tuple[str, UUID]]:
    """Edges with ``ref:`` targets resolved to the versions made from this output."""
    resolved: list[tuple[str, UUID]] = []
    for edge in edges:
        ref = _ref(edge)
        resolved.append((edge.kind, made[ref] if ref is not None else parse_id(edge.to, "node version")))
    return resolved


def _ref(edge: EdgeOut) -> str | None:
    return edge.to[len(REF) :] if edge.to.startswith(REF) else None


def _optional_version(value: str | None) -> UUID | None:
    return None if value is None else _existing_version(value)


def _existing_version(value: str) -> UUID:
    if value.startswith(REF):
        raise BadInput(f"{value} is a new node of this output; only edges may name it")
    return parse_id(value, "node version")


@contextmanager
def _at(where: str) -> Iterator[None]:
    """Prefix a reason with its place in the output."""
    try:
        yield
    except BadInput as exc:
        raise type(exc)(f"{where}: {exc}") from None


class Outputs:
    """The output writer over one transaction (the run service calls it fenced)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def apply(
        self,
        run: Mapping[Any, Any],
        output: AgentOutput,
        *,
        actor: str,
        later: list[dict[str, Any]] | None = None,
    ) -> Applied:
        return apply_output(self._conn, run, output, actor=actor, later=later)
