"""Applying a run's output to the ledger (docs/architecture.md §7).

:func:`check_output` reads the rows the output names and has the domain's
output check (``council.domain.output_check``) look at every reference and
limit before anything is written; :func:`apply_output` then writes it all in
the caller's transaction, so a failure anywhere leaves nothing behind.
Named SQL: council/sql/outputs.sql and council/sql/claim_store.sql.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from council.domain import commands, output_check
from council.domain import source as sources
from council.domain.agent_output import AgentOutput, CitationOut, EdgeBetween, EdgeOut, control_view
from council.domain.commands import Cite
from council.domain.ids import parse_id
from council.domain.output_check import (
    BranchFacts,
    ClaimTarget,
    Known,
    OutputRun,
    VersionFacts,
    creation_order,
    optional_version,
    ref_of,
    ref_of_text,
    references,
)
from council.domain.protocol import judges_every_proposition
from council.domain.results.runs import Applied
from council.domain.rival_edges import without_bad_rivals
from council.errors import NotFound
from council.ledger import events, evidence, retraction_votes
from council.ledger.actions import Actions
from council.ledger.alternatives import Alternatives
from council.ledger.branches import Branches
from council.ledger.citations import attached_evidence
from council.ledger.claims import defer_checked_claims, write_checked_claims
from council.ledger.nodes import Nodes
from council.ledger.pg import Connection, Row, column, fetch, fetch_one, id_of
from council.ledger.round_briefings import RoundBriefings
from council.ledger.run_phases import CheckFacts, DeferredClaims
from council.ledger.threads import main_branch_id


@dataclass(frozen=True)
class Checked:
    """An output that passed the check: as it will be written (contradicts edges that name
    no version of the thread left out, ``council.domain.rival_edges``), why each such edge
    was left out, and the node versions its claims are on (their rows, by id)."""

    output: AgentOutput
    dropped: list[str]
    claimable: dict[UUID, Any]


def check_output(
    conn: Connection, run: Mapping[Any, Any], output: AgentOutput, read: CheckFacts | None = None
) -> Checked:
    """Raise BadInput with a one-line reason on the first problem; writes nothing.
    ``run`` is the run's row as read in this transaction (the writer's fenced
    row), so it is not looked up again. The rows the output names are read
    first, then checked by the domain (``council.domain.output_check``). ``read``: the
    claimed versions and attached evidence, read already by the statement that fenced the
    run (``council_end_run_v1``), for references that include this output's."""
    thread_id = run["thread_id"]
    refs = references(output)
    versions = _by_id(conn, "versions_by_id", "version_ids", refs.versions)
    output, dropped = without_bad_rivals(
        output, {i: VersionFacts(r["thread_id"], r["branch_id"]) for i, r in versions.items()}, thread_id
    )
    claimable = _claimable(conn, run["id"], refs.claimed_versions) if read is None else dict(read.claimable)
    main = main_branch_id(conn, thread_id) if refs.needs_main_branch else None
    parents = [versions[at]["branch_id"] for at in refs.fork_points if at in versions]
    branch_ids = list(dict.fromkeys([*refs.branches, *([main] if main else []), *parents]))
    known = Known(
        main_branch_id=main,
        proposals={
            p: facts
            for p in refs.proposals
            if (facts := retraction_votes.vote_facts(conn, p, run["id"])) is not None
        },
        claimed_versions={
            i: ClaimTarget(r["thread_id"], r["created_by_run_id"], r["claimed_by_this_run"])
            for i, r in claimable.items()
        },
        branches={
            i: BranchFacts(r["thread_id"], r["status"])
            for i, r in _by_id(conn, "branch_facts_by_id", "branch_ids", branch_ids).items()
        },
        logical_nodes={
            i: r["thread_id"]
            for i, r in _by_id(conn, "logical_node_threads_by_id", "node_ids", refs.logical_nodes).items()
        },
        versions={
            i: VersionFacts(r["thread_id"], r["branch_id"], r["logical_node_id"]) for i, r in versions.items()
        },
        attached_evidence=read.attached
        if read is not None
        else frozenset(attached_evidence(conn, thread_id, refs.evidence)),
        must_judge=_must_judge(conn, run),
    )
    output_check.check(
        output,
        OutputRun(run["id"], thread_id, run.get("mode"), run.get("proposal_id")),
        known,
    )
    return Checked(output, dropped, claimable)


def _must_judge(conn: Connection, run: Mapping[str, object]) -> tuple[UUID, ...]:
    """What a council's cross-review run must judge (none for any other run)."""
    run_id, dispatch_id, round_no = run.get("id"), run.get("dispatch_id"), run.get("round")
    control = run.get("control_of") is not None
    if not (isinstance(run_id, UUID) and isinstance(dispatch_id, UUID) and isinstance(round_no, int)):
        return ()
    if not judges_every_proposition(str(run.get("mode")), round_no, control=control):
        return ()
    return tuple(RoundBriefings(conn).to_judge(run_id, dispatch_id, round_no))


def apply_output(
    conn: Connection,
    run: Mapping[Any, Any],
    output: AgentOutput,
    *,
    actor: str,
    later: list[dict[str, Any]] | None = None,
    facts: CheckFacts | None = None,
    deferred: DeferredClaims | None = None,
) -> Applied:
    """Check, then write everything in ``conn``'s transaction (new nodes are
    originated by the run; ``ref:`` edges point at the versions made here).
    ``later``: the claim.added and run.output_applied events are handed to it
    (kind, actor, payload, a claim's subject) for the caller to append with the
    run's end, in the same transaction and order, instead of being appended here;
    ``deferred`` (with ``later``): the claims and their citations too, for the statement that
    ends the run to insert (``council_apply_run_v1``)."""
    left_out: dict[str, int] = {}
    if run.get("control_of") is not None:  # a control run: its claims on existing versions only
        output, left_out = control_view(output)
    checked = check_output(conn, run, output, facts)
    output, claimed_versions = checked.output, checked.claimable
    run_id, thread_id = run["id"], run["thread_id"]
    if contradicts(output):  # the thread's alternatives key first, before any row lock (node_store)
        Alternatives(conn).lock(thread_id)
    votes = [
        retraction_votes.record_vote(
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
    for node in creation_order(output.new_nodes):
        made[node.ref] = node_store.add(
            commands.NewNode(
                thread=thread_id,
                content=node.content,
                status=node.status,
                branch=parse_id(node.branch_id, "branch") if node.branch_id else None,
                edges=tuple(_edges(node.edges, made)),
                cites=tuple(_cites(conn, thread_id, node.cites, actor, added)),
                run=run_id,
                confidence=node.confidence,
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
            held=True,
        ).version_id
        for version in output.new_versions
    ]
    linked = _edges_between(conn, thread_id, run_id, output.edges, made)
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
    if deferred is not None and later is not None:  # inserted by the statement that ends the run
        claim_ids = defer_checked_claims(
            run=run, claims=new_claims, versions=claimed_versions, actor=actor, later=later, deferred=deferred
        )
    else:
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
                parent_branch=_fork_parent(conn, thread_id, optional_version(fork.at_version_id)),
                at_version=optional_version(fork.at_version_id),
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
                version=optional_version(action.node_version_id),
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
    if output.edges:
        result["edges"] = linked.ids
    touched = [*claimed, *result["nodes"], *versions, *linked.rivals]
    # each rival of what this output judged or linked is decided again (its derived disputes,
    # the margin): a claim on one alternative changes every other's decision. An output that
    # only claims has them from the statement that fenced the run, which read the rivals of
    # the versions it claims on; one that makes or links versions changes the sets first.
    only_claims = not (result["nodes"] or versions or output.edges)
    if only_claims and facts is not None and set(claimed) == set(facts.claimable):
        rivals = list(facts.rivals)
    else:
        rivals = Alternatives(conn).rival_heads(touched)
    result["touched_versions"] = list(dict.fromkeys([*touched, *rivals]))
    summary: dict[str, object] = {key: len(ids) for key, ids in result.items()}
    if left_out:
        summary["control_left_out"] = left_out
    if checked.dropped:
        summary["edges_dropped"] = checked.dropped
    if later is not None:
        later.append({"kind": "run.output_applied", "actor": actor, "payload": summary})
    else:
        events.append(
            conn, "run.output_applied", actor=actor, thread_id=thread_id, subject_id=run_id, payload=summary
        )
    return Applied.model_validate(result)


@dataclass(frozen=True)
class _Linked:
    ids: list[UUID]  # the edges written
    rivals: list[UUID]  # the ends of its contradicts edges: their decisions change


def contradicts(output: AgentOutput) -> bool:
    """Whether the output writes a contradicts edge: a new node's, a new version's, or between versions."""
    kinds = [e.kind for n in output.new_nodes for e in n.edges]
    kinds += [e.kind for v in output.new_versions for e in v.edges]
    return "contradicts" in kinds or any(e.kind == "contradicts" for e in output.edges)


def _edges_between(
    conn: Connection, thread_id: UUID, run_id: UUID, edges: Sequence[EdgeBetween], made: Mapping[str, UUID]
) -> _Linked:
    """The output's edges between versions (a ``ref:`` start resolved to the version made
    here), contradicts edges checked under the thread's alternatives key first."""
    if not edges:
        return _Linked([], [])
    rows = []
    for edge in edges:
        start = ref_of_text(edge.node_version_id)
        source = made[start] if start is not None else parse_id(edge.node_version_id, "node version")
        rows.append((edge.kind, source, parse_id(edge.to, "node version")))
    rivals = [(source, target) for kind, source, target in rows if kind == "contradicts"]
    Alternatives(conn).check_edges(thread_id, rivals)
    document = [
        {"kind": k, "from_version_id": str(a), "to_version_id": str(b)} for k, a, b in dict.fromkeys(rows)
    ]
    ids = column(
        conn, "add_edges_between", UUID, thread_id=thread_id, run_id=run_id, edges=json.dumps(document)
    )
    return _Linked(ids, list(dict.fromkeys(v for pair in rivals for v in pair)))


def _claimable(conn: Connection, run_id: UUID, version_ids: Sequence[UUID]) -> dict[UUID, Any]:
    """The claimed versions' rows by id, each with the type of the claim this run already
    has on it (``claimed_by_this_run``, None for none), in one query."""
    if not version_ids:
        return {}
    return {
        id_of(row): row
        for row in fetch(conn, "claimable_versions", Row, run_id=run_id, ids=list(set(version_ids)))
    }


def _fork_parent(conn: Connection, thread_id: UUID, at: UUID | None) -> UUID:
    """A fork leaves the branch of the version it diverges at (main without one)."""
    if at is None:
        return main_branch_id(conn, thread_id)
    found = fetch_one(conn, "version_branch", _VersionBranch, version_id=at)
    if found is None:
        raise NotFound(f"no node version with id {at}")
    if found.thread_id != thread_id:
        raise NotFound(f"node version {at} belongs to another thread")
    return found.branch_id


@dataclass(frozen=True, slots=True)
class _VersionBranch:
    id: UUID
    thread_id: UUID
    branch_id: UUID


def _by_id(
    conn: Connection, name: str, ids_param: str, row_ids: Sequence[UUID]
) -> dict[UUID, dict[str, Any]]:
    """The rows the named query finds for these ids, by id, in one query (none for an unknown id)."""
    if not row_ids:
        return {}
    return {
        id_of(row): row for row in fetch(conn, name, Row, screen=False, **{ids_param: list(set(row_ids))})
    }


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
        ref = ref_of(edge)
        resolved.append((edge.kind, made[ref] if ref is not None else parse_id(edge.to, "node version")))
    return resolved


class Outputs:
    """The output writer over one transaction (the run service calls it fenced)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def apply(
        self,
        run: Mapping[str, object],
        output: AgentOutput,
        *,
        actor: str,
        later: list[dict[str, object]] | None = None,
        facts: CheckFacts | None = None,
        deferred: DeferredClaims | None = None,
    ) -> Applied:
        return apply_output(self._conn, run, output, actor=actor, later=later, facts=facts, deferred=deferred)
