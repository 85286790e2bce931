"""`council replay --rule-set | rule-set ...`: learning from the council's own record."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from council.cli.common import JsonOpt, actor, uow
from council.cli.output import console, emit, inert, returns
from council.cli.tables import Column, cell, table
from council.errors import BadInput
from council.files import read_regular

rule_set_app = typer.Typer(
    help="Rule sets: store one (with the counterfactual report that motivated it), pin it for new threads.",
    no_args_is_help=True,
)

MAX_FILE_BYTES = 1_000_000


def _json_file(path: Path, what: str) -> Any:
    data = read_regular(path, what, MAX_FILE_BYTES)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadInput(f"cannot read the {what} {path}: not UTF-8 text") from None
    except ValueError as exc:
        raise BadInput(f"the {what} {path} is not JSON: {exc}") from None


def rule_set_ref(value: str) -> dict[str, Any] | str:
    """A rule-set file's document, or the id of a stored rule set."""
    path = Path(value)
    if path.exists():  # a directory, a FIFO or a device is refused by name, not taken for an id
        document = _json_file(path, "rule-set file")
        if not isinstance(document, dict):
            raise BadInput(f"the rule-set file {path} must hold a JSON object")
        return document
    if "/" in value or value.endswith(".json"):
        raise BadInput(f"no rule-set file {value}")
    return value


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise BadInput(
            f"invalid --since {value!r}: expected an ISO 8601 time, e.g. 2026-12-01T09:00Z"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def counterfactual_replay(rule_set: str, thread: str | None, since: str | None, as_json: bool) -> None:
    """`council replay --rule-set`: the body of the replay command in counterfactual mode."""
    from council.services.counterfactual import counterfactual

    result = counterfactual(uow(), rule_set_ref(rule_set), thread=thread, since=_since(since))

    def render(data: dict[str, Any]) -> None:
        console.print(
            f"[bold]{inert(data['rule_set_id'])}[/]: {len(data['changed'])} of {data['compared']} stored "
            f"decision(s) would change ({data['reproduced']} reproduced under their pinned rules)"
        )
        for change in data["changed"]:
            console.print(
                f"  {inert(change['kind'])} {inert(change['id'])}  "
                f"version {inert(change['node_version_id'])}: "
                f"{inert(change['stored_outcome'])} → [bold]{inert(change['counterfactual_outcome'])}[/]"
            )
            after = {r["rule"]: r for r in change["counterfactual_reasons"]}
            for rule in change["rules_changed"]:
                reason = after.get(rule)
                mark = "[green]✓[/]" if reason and reason["ok"] else "[red]✗[/]"
                detail = inert(reason["detail"] if reason else "not applied")
                console.print(f"      {mark} {inert(rule)}: {detail}")
        if data["not_reproduced"]:
            console.print(
                f"[red]{len(data['not_reproduced'])} decision(s) did not reproduce[/] "
                "(see `council replay ID`): " + inert(", ".join(data["not_reproduced"]))
            )
        console.print(f"[dim]report {data['report_sha256']}[/]")

    emit(result, as_json, render)


@rule_set_app.command("add")
@returns("council.domain.results.learning:RuleSetStored")
def rule_set_add_cmd(
    file: Annotated[Path, typer.Argument(help="A rule-set JSON file: {id, description, body}.")],
    report: Annotated[
        Path | None,
        typer.Option(
            "--report", help="The counterfactual report (replay --rule-set --json) that motivated it."
        ),
    ] = None,
    pin: Annotated[bool, typer.Option("--pin", help="Pin it for new threads.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Store a rule set with its provenance (and pin it for new threads)."""
    from council.services.counterfactual import store_rule_set

    document = _json_file(file, "rule-set file")
    if not isinstance(document, dict):
        raise BadInput(f"the rule-set file {file} must hold a JSON object")
    motivated = None if report is None else _json_file(report, "report")
    if motivated is not None and not isinstance(motivated, dict):
        raise BadInput(f"the report {report} must hold a JSON object")
    result = store_rule_set(uow(), document, report=motivated, pin=pin, actor=actor())

    def render(data: dict[str, Any]) -> None:
        shown = data["rule_set"]
        console.print(f"rule set {inert(shown['id'])} " + ("stored" if data["created"] else "already stored"))
        if shown["provenance"]:
            console.print(f"  motivated by report {shown['provenance']['report_sha256']}")
        if shown["pinned"]:
            console.print("  pinned for new threads")

    emit(result, as_json, render)


@rule_set_app.command("pin")
@returns("council.domain.results.learning:RuleSetShown")
def rule_set_pin_cmd(rule_set_id: str, as_json: JsonOpt = False) -> None:
    """Pin new threads to a stored rule set (open threads keep theirs)."""
    from council.services.counterfactual import pin_rule_set

    result = pin_rule_set(uow(), rule_set_id, actor=actor())
    emit(result, as_json, lambda data: console.print(f"new threads are pinned to {data['id']}"))


@rule_set_app.command("list")
@returns("council.domain.results.learning:RuleSetList")
def rule_set_list_cmd(as_json: JsonOpt = False) -> None:
    """Stored rule sets, their provenance and which one new threads are pinned to."""
    from council.services.counterfactual import list_rule_sets

    columns: list[Column] = [
        ("id", "rule set", 20),
        ("pinned", "pinned", 6),
        ("created_at", "created", 19),
        ("description", "description", 0, True),
    ]
    emit(list_rule_sets(uow()), as_json, table("rule sets", columns, _rule_set_cell, key="rule_sets"))


@returns("council.domain.results.learning:StancesShown")
def stances_cmd(
    thread: Annotated[str, typer.Option("--thread", help="Thread id.")],
    as_json: JsonOpt = False,
) -> None:
    """Stance changes: held, toward or against the stances a run was shown, after
    new or invalidated evidence, a self-revision (its control run, `dispatch --controls`,
    changed alike without seeing anyone), or with no recorded cause."""
    from council.services.learning import stances

    result = stances(uow(), thread)

    def render(data: dict[str, Any]) -> None:
        console.print(
            "  ".join(f"{inert(name)} [bold]{count}[/]" for name, count in data["counts"].items()),
            highlight=False,
        )
        columns: list[Column] = [
            ("change_class", "class", 17),
            ("agent", "agent", 10),
            ("round", "rd", 2),
            ("node_version_id", "version", 8),
            ("exposed_stances", "shown", 5),
            ("change", "from → to (its control)", 0, True),
        ]
        table("stance changes", columns, _stance_cell, key="changes")(data)

    emit(result, as_json, render)


@returns("council.domain.results.learning:CalibrationShown")
def calibration_cmd(
    thread: Annotated[str | None, typer.Option("--thread", help="Only this thread.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Per model: endorsements that survived, disputes vindicated, confidence vs outcome."""
    from council.services.learning import calibration

    result = calibration(uow(), thread=thread)

    def render(data: dict[str, Any]) -> None:
        if not data["models"]:
            console.print("calibration: no model has an endorsement or dispute yet", highlight=False)
        for model in data["models"]:
            brier = "—" if model["brier"] is None else f"{model['brier']:.3f}"
            console.print(f"[bold]{inert(model['model'])}[/] ({inert(model['provider'])})", highlight=False)
            m = model
            console.print(
                f"  endorsements {m['endorsements']} (live {m['endorsements_live']}, superseded "
                f"{m['endorsements_superseded']}, retracted {m['endorsements_retracted']}) · disputes "
                f"{m['disputes']} (vindicated {m['disputes_vindicated']}) · resolved {m['resolved']}, "
                f"right {m['right']} · brier {brier}",
                highlight=False,
            )
            cells = [
                f"{b['low']:.1f}–{b['high']:.1f}: {b['resolved']}"
                + (
                    f" (conf {b['mean_confidence']:.2f}, right {b['right_share']:.2f})"
                    if b["resolved"]
                    else ""
                )
                for b in model["reliability"]
            ]
            console.print("  reliability: " + "; ".join(cells), highlight=False)

    emit(result, as_json, render)


def _rule_set_cell(item: Mapping[str, object], key: str) -> str:
    if key == "id":
        return str(item["id"])  # a rule set's id is its name, taken whole
    if key == "pinned":
        return "yes" if item["pinned"] else ""
    return cell(item, key)


def _stance_cell(item: Mapping[str, object], key: str) -> str:
    if key == "change":
        control = f" ({item['control_claim_type']})" if item.get("control_claim_type") else ""
        return f"{item.get('prior_claim_type') or '—'} → {item['claim_type']}{control}"
    return cell(item, key)


def register(app: typer.Typer) -> None:
    app.add_typer(rule_set_app, name="rule-set")
    app.command("stances")(stances_cmd)
    app.command("calibration")(calibration_cmd)
