"""Every noun listable: `evidence list`, `node list`, `run list`, `dispatch list`,
`dispatch show`, `proposal list`, `consolidation list`, `claim list` and `action list`.
Human tables fit 80 columns: 8-character ids (accepted back wherever an id is taken),
text cut with an ellipsis, never wrapped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from council.cli.common import JsonOpt, uow
from council.cli.output import console, emit, inert, returns
from council.cli.render import short, when
from council.cli.tables import Column, cell, cost_text, table

proposal_app = typer.Typer(help="List retraction proposals.", no_args_is_help=True)
consolidation_app = typer.Typer(help="List consolidations.", no_args_is_help=True)

Thread = Annotated[str, typer.Option("--thread", help="Thread id.")]


def _run_cell(item: Mapping[str, object], key: str) -> str:
    if key == "mode" and item.get("control_of"):
        return "control"  # a control run (dispatch --controls): never counted as support
    return cell(item, key)


def _node_cell(item: Mapping[str, object], key: str) -> str:
    if key == "claims":
        return f"+{item['support_claims']} -{item['dispute_claims']} ~{item['abstain_claims']}"
    if key == "consolidated":
        live = item["live_consolidation_version_id"]
        if live is None:
            return "no"
        return "yes" if live == item["version_id"] else f"v.{short(live)}"
    return cell(item, key)


def _dispatch_cell(item: Mapping[str, object], key: str) -> str:
    if key == "result":
        return f"{item['succeeded']} ok {item['failed']} failed {item['unfinished']} open"
    if key == "usd":
        cost = item["cost"]
        return f"{float(str(cost['usd'])):.4f}" if isinstance(cost, Mapping) else ""
    return cell(item, key)


def _dispatch_shown(data: dict[str, Any]) -> None:
    console.print(
        f"dispatch {inert(short(data['id']))} on thread {inert(short(data['thread_id']))}: "
        f"{inert(data['mode'])}, {data['rounds']} round(s) of {inert(','.join(data['agents']))}, "
        f"{'with control runs, ' if data.get('controls') else ''}{when(data['created_at'])}",
        highlight=False,
    )
    console.print(f"{_dispatch_cell(data, 'result')}; {cost_text(data['cost'])}", highlight=False)
    table("runs", RUN_COLUMNS, _run_cell)({"items": data["runs"]})
    for run in data["runs"]:
        if run["status"] == "failed":
            console.print(
                f"  {short(run['id'])} {inert(run['agent'])} failed: {inert(run['error'])}", highlight=False
            )


RUN_COLUMNS: list[Column] = [
    ("id", "run", 8),
    ("agent", "agent", 12),
    ("round", "rd", 2),
    ("mode", "mode", 12),
    ("status", "status", 9),
    ("created_at", "created", 19),
    ("error", "error", 0),
]


@returns("council.domain.results.lists:EvidenceList")
def evidence_list(thread: Thread, as_json: JsonOpt = False) -> None:
    """The thread's evidence in the order it was added, with its validity."""
    from council.services.lists import thread_evidence

    emit(
        thread_evidence(uow(), thread),
        as_json,
        table(
            "evidence",
            [
                ("id", "id", 8),
                ("validity", "validity", 11),
                ("source_kind", "kind", 4),
                ("title", "title", 0),
            ],
            cell,
        ),
    )


@returns("council.domain.results.lists:NodeList")
def node_list(thread: Thread, as_json: JsonOpt = False) -> None:
    """The thread's nodes at their head version: status, claims (+support -dispute
    ~abstain) and whether a consolidation stands."""
    from council.services.lists import thread_nodes

    emit(
        thread_nodes(uow(), thread),
        as_json,
        table(
            "nodes",
            [
                ("version_id", "version", 8),
                ("version_no", "v", 2),
                ("status", "status", 9),
                ("claims", "claims", 9),
                ("consolidated", "consol.", 10),
                ("content", "content", 0),
            ],
            _node_cell,
        ),
    )


@returns("council.domain.results.lists:RunListing")
def run_list(
    thread: Annotated[str | None, typer.Option("--thread", help="Only this thread's runs.")] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="created, queued, running, succeeded or failed.")
    ] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's runs.")] = None,
    dispatch: Annotated[str | None, typer.Option("--dispatch", help="Only this dispatch's runs.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many, the newest.")] = 200,
    as_json: JsonOpt = False,
) -> None:
    """Runs that pass the filters, the newest --limit in creation order, with their cost."""
    from council.services.lists import list_runs

    found = list_runs(uow(), thread=thread, status=status, agent=agent, dispatch=dispatch, limit=limit)
    emit(found, as_json, table("runs", RUN_COLUMNS, _run_cell))


@returns("council.domain.results.lists:DispatchList")
def dispatch_list(thread: Thread, as_json: JsonOpt = False) -> None:
    """The thread's dispatches, oldest first, with their runs by status and cost."""
    from council.services.lists import thread_dispatches

    emit(
        thread_dispatches(uow(), thread),
        as_json,
        table(
            "dispatches",
            [
                ("id", "dispatch", 8),
                ("mode", "mode", 12),
                ("rounds", "rd", 2),
                ("agents", "agents", 18),
                ("result", "runs", 24),
                ("usd", "usd", 0),
            ],
            _dispatch_cell,
        ),
    )


@returns("council.domain.results.lists:DispatchShown")
def dispatch_show(
    dispatch_id: Annotated[str, typer.Argument(help="Dispatch id.")], as_json: JsonOpt = False
) -> None:
    """One dispatch: its runs, who failed and why, and its cost."""
    from council.services.lists import show_dispatch

    emit(show_dispatch(uow(), dispatch_id), as_json, _dispatch_shown)


@returns("council.domain.results.lists:ProposalList")
def proposal_list(
    thread: Annotated[str | None, typer.Option("--thread", help="Only this thread's proposals.")] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="open, retracted, restored or superseded.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Retraction proposals, oldest first, with the version under review and the votes cast."""
    from council.services.lists import list_proposals

    emit(
        list_proposals(uow(), thread=thread, status=status),
        as_json,
        table(
            "retraction proposals",
            [
                ("id", "proposal", 8),
                ("status", "status", 10),
                ("node_version_id", "version", 8),
                ("votes", "votes", 5),
                ("reason", "reason", 0),
            ],
            cell,
        ),
    )


Limit = Annotated[int, typer.Option("--limit", help="At most this many, the newest.")]
NodeOpt = Annotated[str | None, typer.Option("--node", help="Only this node version's.")]
ThreadOpt = Annotated[str | None, typer.Option("--thread", help="Only this thread's.")]


@returns("council.domain.results.lists:ConsolidationList")
def consolidation_list(
    thread: ThreadOpt = None,
    status: Annotated[str | None, typer.Option("--status", help="live, superseded or retracted.")] = None,
    node: Annotated[
        str | None, typer.Option("--node", help="A node version: every consolidation of its node.")
    ] = None,
    limit: Limit = 200,
    as_json: JsonOpt = False,
) -> None:
    """Consolidations that pass the filters, the newest --limit in creation order, with
    the version consolidated and its memory's status."""
    from council.services.lists import list_consolidations

    found = list_consolidations(uow(), thread=thread, status=status, node=node, limit=limit)
    columns: list[Column] = [
        ("id", "consol.", 8),
        ("node_version_id", "version", 8),
        ("status", "status", 10),
        ("memory_status", "memory", 11),
        ("created_at", "created", 19),
        ("content", "content", 0, True),
    ]
    emit(found, as_json, table("consolidations", columns, cell))


@returns("council.domain.results.lists:ClaimList")
def claim_list(
    run: Annotated[str | None, typer.Option("--run", help="Only this run's claims.")] = None,
    node: NodeOpt = None,
    thread: ThreadOpt = None,
    claim_type: Annotated[
        str | None, typer.Option("--type", help="originate, endorse, dispute or abstain.")
    ] = None,
    limit: Limit = 200,
    as_json: JsonOpt = False,
) -> None:
    """Claims that pass the filters (--run, --node, --thread, --type), the newest --limit in
    creation order, with the claiming run's agent and round."""
    from council.services.lists import list_claims

    found = list_claims(uow(), run=run, node=node, thread=thread, claim_type=claim_type, limit=limit)
    columns: list[Column] = [
        ("run_id", "run", 8),
        ("agent", "agent", 10),
        ("round", "rd", 2),
        ("claim_type", "type", 9),
        ("confidence", "conf", 4),
        ("node_version_id", "version", 8),
        ("rationale", "rationale", 0),
    ]
    emit(found, as_json, table("claims", columns, _claim_cell))


@returns("council.domain.results.lists:ActionList")
def action_list(
    thread: ThreadOpt = None,
    status: Annotated[str | None, typer.Option("--status", help="open, satisfied or cancelled.")] = None,
    node: NodeOpt = None,
    limit: Limit = 200,
    as_json: JsonOpt = False,
) -> None:
    """Pending actions that pass the filters, the newest --limit in creation order, each
    with its acceptance condition."""
    from council.services.lists import list_actions

    found = list_actions(uow(), thread=thread, status=status, node=node, limit=limit)
    columns: list[Column] = [
        ("id", "action", 8),
        ("status", "status", 9),
        ("node_version_id", "version", 8),
        ("what", "description → accepted when", 0),
    ]
    emit(found, as_json, table("pending actions", columns, _action_cell))


def _claim_cell(item: Mapping[str, object], key: str) -> str:
    if key == "confidence":
        return f"{float(str(item['confidence'])):.2f}"
    if key == "agent" and item.get("control"):
        return f"{item['agent']}*"  # a control run's claim: never support
    return cell(item, key)


def _action_cell(item: Mapping[str, object], key: str) -> str:
    if key == "what":
        return f"{cell(item, 'description')} → {cell(item, 'acceptance_condition')}"
    return cell(item, key)


def register(app: typer.Typer) -> None:
    from council.cli.graph_cmds import action_app, claim_app, node_app
    from council.cli.ledger_cmds import evidence_app
    from council.cli.run_cmds import dispatch_app, run_app

    evidence_app.command("list")(evidence_list)
    node_app.command("list")(node_list)
    run_app.command("list")(run_list)
    dispatch_app.command("list")(dispatch_list)
    dispatch_app.command("show")(dispatch_show)
    proposal_app.command("list")(proposal_list)
    app.add_typer(proposal_app, name="proposal")
    consolidation_app.command("list")(consolidation_list)
    app.add_typer(consolidation_app, name="consolidation")
    claim_app.command("list")(claim_list)
    action_app.command("list")(action_list)
