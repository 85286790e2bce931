"""`council consolidate | replay | groups | memory | history`: governed consolidation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from council.cli import render
from council.cli.common import JsonOpt, actor, touched_memory, uow
from council.cli.output import console, emit, inert, returns
from council.cli.tables import Column, cell, table
from council.errors import BadInput

memory_app = typer.Typer(help="Stable memory projected from consolidations.", no_args_is_help=True)


def _render_decision(data: dict[str, Any]) -> None:
    colour = {"committed": "green", "already_consolidated": "cyan", "would_commit": "green"}.get(
        data["outcome"], "yellow"
    )
    version = inert(data["node_version_id"])
    console.print(f"[bold {colour}]{inert(data['outcome'])}[/]  node version {version}")
    if data.get("consolidation_id"):
        console.print(f"consolidation {inert(data['consolidation_id'])}")
    for reason in data.get("reasons", []):
        mark = "[green]✓[/]" if reason["ok"] else "[red]✗[/]"
        console.print(f"  {mark} {inert(reason['rule'])}: {inert(reason['detail'])}")


@returns("council.domain.results.consolidation:Evaluated")
def consolidate_cmd(
    node: Annotated[str, typer.Option("--node", help="Node version id.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Evaluate only; write nothing.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Evaluate a node version under its pinned rules and commit it once if ready."""
    from council.services.consolidation import consolidate

    result = consolidate(uow(), node, actor=actor(), dry_run=dry_run)
    emit(result, as_json, _render_decision)


@returns("council.domain.results.learning:ReplayReport")
def replay_cmd(
    record_id: Annotated[
        str | None, typer.Argument(help="A consolidation or evaluation id (omit with --rule-set).")
    ] = None,
    rule_set: Annotated[
        str | None,
        typer.Option("--rule-set", help="Counterfactual: a rule-set JSON file or a stored rule set's id."),
    ] = None,
    thread: Annotated[str | None, typer.Option("--thread", help="With --rule-set: only this thread.")] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="With --rule-set: decisions recorded at or after (ISO 8601)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Rebuild a decision from stored records and check it matches; with --rule-set,
    decide every stored decision again under another rule set (writes nothing)."""
    if rule_set is not None:
        from council.cli.learning_cmds import counterfactual_replay

        if record_id is not None:
            raise BadInput("give a decision id or --rule-set, not both")
        counterfactual_replay(rule_set, thread, since, as_json)
        return
    if record_id is None or thread is not None or since is not None:
        raise BadInput("give a consolidation or evaluation id (--thread and --since go with --rule-set)")
    from council.services.consolidation import replay

    result = replay(uow(), record_id)

    def render(data: dict[str, Any]) -> None:
        verdict = "[green]match[/]" if data["match"] else "[red]MISMATCH[/]"
        console.print(f"{verdict}  {inert(data['kind'])} {inert(data['id'])}")
        console.print(f"  stored   {data['snapshot_sha256']}  ({inert(data['stored_outcome'])})")
        console.print(f"  replayed {data['replayed_sha256']}  ({inert(data['replayed_outcome'])})")
        if data["differences"]:
            console.print(f"  differs in: {inert(', '.join(data['differences']))}")

    emit(result, as_json, render)
    if not result.match:
        raise typer.Exit(1)


@returns("council.domain.results.consolidation:GroupsShown")
def groups_cmd(
    node: Annotated[str, typer.Option("--node", help="Node version id.")],
    as_json: JsonOpt = False,
) -> None:
    """Independence groups of the runs that claimed on a node version."""
    from council.services.consolidation import groups

    result = groups(uow(), node)
    columns: list[Column] = [
        ("id", "group", 18),
        ("kind", "kind", 7),
        ("max_confidence", "conf", 4),
        ("providers", "providers", 14, True),
        ("runs", "runs", 0, True),
    ]

    def render(data: Mapping[str, object]) -> None:
        table("groups", columns, _group_cell, key="groups")(data)
        n_eff = data["n_eff"]
        console.print(
            f"{data['support_groups']} support group(s), {data['dispute_groups']} dispute group(s); "
            f"n_eff {_n_eff(n_eff if isinstance(n_eff, float | int) else None)}",
            highlight=False,
        )

    emit(result, as_json, render)


def _n_eff(value: float | None) -> str:
    """Effective independent support votes, or why none is shown."""
    return "— (the rule set measures no correlation table)" if value is None else f"{value:.2f}"


@returns("council.domain.results.consolidation:History")
def history_cmd(
    node: Annotated[str, typer.Option("--node", help="Any version id of the logical node.")],
    as_json: JsonOpt = False,
) -> None:
    """Consolidations and recorded evaluations of a logical node, with reasons."""
    from council.services.consolidation import history

    result = history(uow(), node)
    emit(result, as_json, render.history)


@memory_app.command("list")
@returns("council.domain.results.consolidation:MemoryList")
def memory_list_cmd(
    status: Annotated[
        str | None, typer.Option("--status", help="stable, provisional, contested, ...")
    ] = None,
    thread: Annotated[str | None, typer.Option("--thread", help="Only this thread.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Memory items with their status and history."""
    from council.services.consolidation import memory_list

    result = memory_list(uow(), status=status, thread=thread)
    touched_memory(result.json_document()["items"])
    emit(result, as_json, render.memory)


def _group_cell(item: Mapping[str, object], key: str) -> str:
    if key == "id":
        return str(item["id"])  # a group's id names its members; no prefix of it is taken back
    if key == "max_confidence":
        return f"{float(str(item['max_confidence'])):.2f}"
    return cell(item, key)


def register(app: typer.Typer) -> None:
    app.command("consolidate")(consolidate_cmd)
    app.command("replay")(replay_cmd)
    app.command("groups")(groups_cmd)
    app.command("history")(history_cmd)
    app.add_typer(memory_app, name="memory")
