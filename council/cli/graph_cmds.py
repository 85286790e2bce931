"""`council node | branch | run | claim | action`: the reasoning graph itself."""

from __future__ import annotations

from typing import Annotated

import typer

from council.cli.common import JsonOpt, actor, record, uow
from council.cli.output import emit, returns
from council.cli.tables import Column, table
from council.domain.vocabulary import EDGE_KINDS
from council.errors import BadInput

node_app = typer.Typer(help="Add nodes, new versions and status moves.", no_args_is_help=True)
branch_app = typer.Typer(help="Fork, merge and close branches.", no_args_is_help=True)
claim_app = typer.Typer(
    help="Originate, endorse, dispute or abstain on a node version.", no_args_is_help=True
)
action_app = typer.Typer(help="Pending actions and their acceptance conditions.", no_args_is_help=True)

Ids = Annotated[list[str] | None, typer.Option()]
_VERSION_KEYS = [
    "logical_node_id",
    "version_id",
    "version_no",
    "status",
    "branch_id",
    "edge_ids",
    "citation_ids",
]


def _edges(specs: list[str] | None) -> tuple[tuple[str, str], ...]:
    """Parse `KIND:VERSION_ID` edge options (the id whole or a unique prefix)."""
    edges: list[tuple[str, str]] = []
    for spec in specs or []:
        kind, _, target = spec.partition(":")
        if kind not in EDGE_KINDS or not target:
            raise BadInput(
                f"invalid --edge {spec!r} (expected KIND:VERSION_ID, KIND one of {', '.join(EDGE_KINDS)})"
            )
        edges.append((kind, target))
    return tuple(edges)


@node_app.command("add")
@returns("council.domain.results.graph:VersionCreated")
def node_add(
    thread: Annotated[str, typer.Option("--thread", help="Thread id.")],
    content: Annotated[str, typer.Option("--content", help="The proposition.")],
    status: Annotated[str, typer.Option("--status", help="open or tentative.")] = "open",
    depends_on: Annotated[
        list[str] | None, typer.Option("--depends-on", help="VERSION_ID (repeatable).")
    ] = None,
    contradicts: Annotated[
        list[str] | None,
        typer.Option("--contradicts", help="VERSION_ID of a rival: both cannot hold (repeatable)."),
    ] = None,
    edge: Annotated[list[str] | None, typer.Option("--edge", help="KIND:VERSION_ID (repeatable).")] = None,
    cites: Annotated[list[str] | None, typer.Option("--cites", help="EVIDENCE_ID (repeatable).")] = None,
    role: Annotated[str, typer.Option("--role", help="Citation role.")] = "supports",
    interpretation: Annotated[str, typer.Option("--interpretation", help="How the evidence is read.")] = "",
    branch: Annotated[str | None, typer.Option("--branch", help="Branch id (default: main).")] = None,
    run: Annotated[str | None, typer.Option("--run", help="The run that originates it.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a logical node with its first version (--contradicts: a rival alternative)."""
    from council.domain.commands import NewNode, same_reading
    from council.services.nodes import add_node

    node = NewNode(
        thread=thread,
        content=content,
        status=status,
        branch=branch,
        edges=(
            *(("depends_on", d) for d in depends_on or []),
            *(("contradicts", c) for c in contradicts or []),
            *_edges(edge),
        ),
        cites=same_reading(cites or [], role, interpretation),
        run=run,
    )
    result = add_node(uow(), node, actor=actor())
    emit(result, as_json, record("node added", _VERSION_KEYS))


@node_app.command("version")
@returns("council.domain.results.graph:VersionCreated")
def node_version(
    logical_node_id: str,
    content: Annotated[str, typer.Option("--content", help="The new content.")],
    status: Annotated[str, typer.Option("--status", help="open or tentative.")] = "open",
    edge: Annotated[list[str] | None, typer.Option("--edge", help="KIND:VERSION_ID (repeatable).")] = None,
    cites: Annotated[list[str] | None, typer.Option("--cites", help="EVIDENCE_ID (repeatable).")] = None,
    role: Annotated[str, typer.Option("--role", help="Citation role.")] = "supports",
    interpretation: Annotated[str, typer.Option("--interpretation")] = "",
    run: Annotated[str | None, typer.Option("--run", help="The run that wrote it.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a new version of a logical node (content changes never edit in place)."""
    from council.domain.commands import NewVersion, same_reading
    from council.services.nodes import add_version

    version = NewVersion(
        logical_node=logical_node_id,
        content=content,
        status=status,
        edges=_edges(edge),
        cites=same_reading(cites or [], role, interpretation),
        run=run,
    )
    result = add_version(uow(), version, actor=actor())
    emit(result, as_json, record("version added", _VERSION_KEYS))


@node_app.command("status")
@returns("council.domain.results.graph:StatusChanged")
def node_status(
    version_id: str,
    to: Annotated[str, typer.Option("--to", help="open, tentative or killed.")],
    reason: Annotated[str, typer.Option("--reason", help="Why (recorded).")],
    as_json: JsonOpt = False,
) -> None:
    """Move a version between open, tentative and killed (appends a transition)."""
    from council.services.nodes import set_node_status

    result = set_node_status(uow(), version_id, status=to, reason=reason, actor=actor())
    emit(result, as_json, record("status changed", ["version_id", "from_status", "status"]))


@node_app.command("show")
@returns("council.domain.results.graph:VersionShown")
def node_show(version_id: str, as_json: JsonOpt = False) -> None:
    """A node version with its status, edges, claims, citations and history."""
    from council.cli import render
    from council.services.nodes import show_node

    emit(show_node(uow(), version_id), as_json, render.node_shown)


@branch_app.command("fork")
@returns("council.domain.results.graph:Branch")
def branch_fork(
    thread: Annotated[str, typer.Option("--thread", help="Thread id.")],
    kind: Annotated[str, typer.Option("--kind", help="objective or node.")],
    label: Annotated[str, typer.Option("--label", help="Short name.")],
    divergence: Annotated[
        str,
        typer.Option(
            "--divergence", help="objective, claim, evidence_interpretation or acceptance_condition."
        ),
    ],
    objective: Annotated[str | None, typer.Option("--objective", help="The alternative objective.")] = None,
    parent: Annotated[str | None, typer.Option("--from", help="Parent branch id (default: main).")] = None,
    at: Annotated[str | None, typer.Option("--at", help="Version id where it diverges.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Fork an objective-level or node-level branch."""
    from council.domain.commands import NewFork
    from council.services.branches import fork_branch

    if kind == "node" and at is None:
        raise BadInput("a node fork needs --at VERSION_ID, the version it diverges at")
    fork = NewFork(
        thread=thread,
        kind=kind,
        label=label,
        divergence_type=divergence,
        objective=objective,
        parent_branch=parent,
        at_version=at,
    )
    result = fork_branch(uow(), fork, actor=actor())
    emit(
        result,
        as_json,
        record("branch", ["id", "kind", "label", "divergence_type", "parent_branch_id", "status"]),
    )


@branch_app.command("merge")
@returns("council.domain.results.graph:Merge")
def branch_merge(
    branch_id: str,
    rationale: Annotated[str, typer.Option("--rationale", help="Why the branches reconcile this way.")],
    into: Annotated[str | None, typer.Option("--into", help="Target branch (default: its parent).")] = None,
    preferred: Annotated[
        str | None, typer.Option("--preferred", help="The version the merge prefers.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Merge a branch explicitly (the only durable 'preferred' choice)."""
    from council.services.branches import merge_branch

    result = merge_branch(
        uow(), branch_id, rationale=rationale, actor=actor(), into=into, preferred_version=preferred
    )
    emit(
        result,
        as_json,
        record("merged", ["id", "source_branch_id", "target_branch_id", "preferred_version_id"]),
    )


@branch_app.command("close")
@returns("council.domain.results.graph:Closed")
def branch_close(
    branch_id: str,
    status: Annotated[str, typer.Option("--as", help="killed (resolved-negative) or abandoned.")],
    reason: Annotated[str, typer.Option("--reason", help="Why (recorded).")],
    as_json: JsonOpt = False,
) -> None:
    """Close a branch as killed or abandoned."""
    from council.services.branches import close_branch

    result = close_branch(uow(), branch_id, status=status, reason=reason, actor=actor())
    emit(result, as_json, record("branch closed", ["id", "status"]))


@branch_app.command("list")
@returns("council.domain.results.graph:BranchList")
def branch_list(thread: Annotated[str, typer.Option("--thread")], as_json: JsonOpt = False) -> None:
    """Branch topology of a thread."""
    from council.services.branches import list_branches

    found = list_branches(uow(), thread)
    columns: list[Column] = [
        ("id", "branch", 8),
        ("kind", "kind", 9),
        ("status", "status", 9),
        ("divergence_type", "divergence", 23),
        ("label", "label", 0),
    ]
    emit(found, as_json, table("branches", columns))


@claim_app.command("add")
@returns("council.domain.results.graph:ClaimAdded")
def claim_add(
    run: Annotated[str, typer.Option("--run", help="Run id.")],
    node: Annotated[str, typer.Option("--node", help="Node version id.")],
    claim_type: Annotated[str, typer.Option("--type", help="originate, endorse, dispute or abstain.")],
    confidence: Annotated[float | None, typer.Option("--confidence", help="0..1 (default 0.5).")] = None,
    rationale: Annotated[str, typer.Option("--rationale", help="Why.")] = "",
    cites: Annotated[list[str] | None, typer.Option("--cites", help="EVIDENCE_ID (repeatable).")] = None,
    interpretation: Annotated[
        str, typer.Option("--interpretation", help="How the cited evidence is read.")
    ] = "",
    as_json: JsonOpt = False,
) -> None:
    """Record a run's claim on a node version."""
    from council.domain.commands import NewClaim, same_reading
    from council.services.claims import add_claim

    claim = NewClaim(
        version=node,
        claim_type=claim_type,
        confidence=confidence,
        rationale=rationale,
        cites=same_reading(cites or [], None, interpretation),
    )
    result = add_claim(uow(), run, claim, actor=actor())
    emit(
        result,
        as_json,
        record("claim added", ["id", "run_id", "node_version_id", "claim_type", "confidence"]),
    )


@action_app.command("add")
@returns("council.domain.results.graph:Action")
def action_add(
    thread: Annotated[str, typer.Option("--thread", help="Thread id.")],
    description: Annotated[str, typer.Option("--description", help="What should happen.")],
    acceptance: Annotated[str, typer.Option("--acceptance", help="What would prove it done.")],
    node: Annotated[str | None, typer.Option("--node", help="Node version it gates.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a pending action with its acceptance condition."""
    from council.domain.commands import NewAction
    from council.services.claims import add_action

    action = NewAction(thread=thread, description=description, acceptance_condition=acceptance, version=node)
    result = add_action(uow(), action, actor=actor())
    emit(result, as_json, record("pending action", ["id", "description", "acceptance_condition", "status"]))


@action_app.command("close")
@returns("council.domain.results.graph:Closed")
def action_close(
    action_id: str,
    status: Annotated[str, typer.Option("--as", help="satisfied or cancelled.")],
    reason: Annotated[str, typer.Option("--reason", help="Why (recorded).")],
    as_json: JsonOpt = False,
) -> None:
    """Record that an action's acceptance condition was met, or drop it."""
    from council.services.claims import close_action

    result = close_action(uow(), action_id, status=status, reason=reason, actor=actor())
    emit(result, as_json, record("pending action", ["id", "status"]))


def register(app: typer.Typer) -> None:
    app.add_typer(node_app, name="node")
    app.add_typer(branch_app, name="branch")
    app.add_typer(claim_app, name="claim")
    app.add_typer(action_app, name="action")
