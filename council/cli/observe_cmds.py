"""`council import | resolve | eval`: observe real disagreement against ground truth
(docs/guide/observe.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from council.cli.common import JsonOpt, actor, uow
from council.cli.learning_cmds import rule_set_ref
from council.cli.output import console, emit, err_console, inert, returns, without_controls
from council.errors import BadInput
from council.files import read_regular

MAX_IMPORT_BYTES = 512 * 1024 * 1024


@returns("council.domain.results.observation:Imported")
def import_cmd(
    file: Annotated[Path, typer.Argument(help="A recorded-debate file.")],
    fmt: Annotated[
        str, typer.Option("--format", help="council-debate-v1 (JSON Lines) or du-debate (JSON).")
    ] = "council-debate-v1",
    answer_pattern: Annotated[
        str | None,
        typer.Option(
            "--answer-pattern", help="du-debate: the regular expression of an answer (group 1 if any)."
        ),
    ] = None,
    numeric: Annotated[
        bool,
        typer.Option(
            "--numeric",
            help="du-debate: answers that read as numbers (once $ , and spaces are dropped) are numbers.",
        ),
    ] = False,
    model: Annotated[
        str | None, typer.Option("--model", help="du-debate: every agent's model (the format names none).")
    ] = None,
    provider: Annotated[
        str | None, typer.Option("--provider", help="du-debate: every agent's provider (its model family).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Import recorded debates: a thread per record, a run per turn (mode imported), the truth
    as resolutions. The same file again writes nothing; a bad record refuses the whole file."""
    from council.services.observation import import_debates

    data = read_regular(file, "debate file", MAX_IMPORT_BYTES)
    result = import_debates(
        uow(),
        data,
        file_name=file.name,
        fmt=fmt,
        answer_pattern=answer_pattern,
        numeric=numeric,
        model=model,
        provider=provider,
        actor=actor(),
        progress=_progress(),
    )

    def render(data: dict[str, Any]) -> None:
        if data["created"]:
            console.print(
                f"imported {data['records']} record(s), {data['turns']} turn(s) "
                f"from {inert(data['file_name'])} "
                f"(sha256 {data['file_sha256'][:12]}, import {data['import_id']})"
            )
            console.print("read them with: council eval --tag file:" + inert(data["file_name"]))
        else:
            console.print(
                f"{inert(data['file_name'])} was imported before (import {data['import_id']}, "
                f"{data['records']} record(s)): nothing written (a file is imported once, as it was read "
                "then: options given now, such as --model or --numeric, do not change it)"
            )

    emit(result, as_json, render)


def _progress() -> Any:
    """Records written so far, on stderr: a line per step when piped, one updated line on a TTY."""
    tty = sys.stderr.isatty()

    def shown(done: int, total: int) -> None:
        if total < 1_000:
            return
        if tty:
            err_console.print(f"\rimported {done}/{total} records", end="")
            if done == total:
                err_console.print()
        else:
            err_console.print(f"imported {done}/{total} records")

    return shown


@returns("council.domain.results.observation:Resolved")
def resolve_cmd(
    node: Annotated[str, typer.Option("--node", help="The node version (id or unique prefix).")],
    outcome: Annotated[str, typer.Option("--outcome", help="true or false.")],
    source: Annotated[str, typer.Option("--source", help="Where the fact comes from.")],
    reason: Annotated[str, typer.Option("--reason", help="Why it decides the node.")],
    as_json: JsonOpt = False,
) -> None:
    """Record an outside fact deciding a node version true or false (appended; a later one supersedes)."""
    from council.services.observation import resolve

    result = resolve(uow(), node, outcome=outcome, source=source, reason=reason, actor=actor())

    def render(data: dict[str, Any]) -> None:
        console.print(
            f"node version {inert(data['node_version_id'])} resolved {inert(str(data['outcome']).lower())} "
            f"(resolution {inert(data['id'])})"
            + (f", superseding {inert(data['supersedes'])}" if data["supersedes"] else "")
        )

    emit(result, as_json, render)


@returns("council.domain.results.observation:EvalReport")
def eval_cmd(
    thread: Annotated[
        list[str] | None, typer.Option("--thread", help="A thread to read (repeatable).")
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="An imported record's tag (repeatable).")
    ] = None,
    rule_set: Annotated[
        list[str] | None,
        typer.Option(
            "--rule-set", help="A rule-set file or stored id (repeatable; default: the pinned one)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """What a council added, against ground truth: accuracy, majority, flips by cause, the
    council's decisions under each rule set, effective votes, the oracle gap, calibration
    and cost (every figure as docs/guide/observe.md defines it). Writes nothing."""
    from council.services.observation import evaluate

    refs: list[dict[str, Any] | str] = [rule_set_ref(value) for value in rule_set or []]
    result = evaluate(uow(), threads=thread or [], tags=tag or [], rule_sets=refs)
    emit(result, as_json, _render_eval)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _render_eval(data: dict[str, Any]) -> None:
    from rich.table import Table

    console.print(f"{data['resolved']} resolved record(s) of {data['records']}")
    agents = Table("agent", "records", "first", "last", "c→w", "w→c", "w→w", box=None)
    for name, figures in data["agents"].items():
        flips = figures["flips"]
        agents.add_row(
            inert(name), str(figures["records"]),
            _pct(figures["first_accuracy"]), _pct(figures["last_accuracy"]),
            str(flips["correct_to_wrong"]), str(flips["wrong_to_correct"]), str(flips["wrong_to_wrong"]),
        )  # fmt: skip
    console.print(agents)
    for which in ("first_round", "last_round"):
        m = data["majority"][which]
        console.print(f"majority, {which.replace('_', ' ')}: {_pct(m['accuracy'])} ({m['ties']} tie(s))")
    # The rule sets side by side (e.g. --rule-set council-default-v1 --rule-set council-default-v2).
    council_table = Table("council under", "decided", "coverage", "accuracy", "wrong", box=None)
    for rule_set, c in data["council"].items():
        council_table.add_row(
            inert(rule_set), str(c["decided"]), _pct(c["coverage"]), _pct(c["accuracy"]), str(c["wrong"])
        )
    console.print(council_table)
    effective = data["effective_votes"]
    if effective["mean_n_eff"] is not None:
        console.print(
            f"effective independent votes per decided node: {effective['mean_n_eff']:.2f} on average"
        )
    gap = data["oracle_gap"]
    console.print(
        f"oracle gap: {gap['oracle_correct']} record(s) had a correct turn; the last-round majority "
        f"missed {gap['majority']}"
    )
    if data["calibration"]:
        cal = data["calibration"]
        console.print(
            f"calibration over {cal['turns']} turn(s): Brier {cal['brier']:.3f}, ECE {cal['ece']:.3f}"
        )
    if data["cost"]:
        cost = data["cost"]
        console.print(f"cost of decided records: ${cost['usd']:.4f}, {cost['prompt_tokens']} + "
                      f"{cost['completion_tokens']} tokens")  # fmt: skip
    console.print(f"[dim]report {data['report_sha256']}[/]")


def register(app: typer.Typer) -> None:
    app.command("import")(import_cmd)
    app.command("resolve")(resolve_cmd)
    app.command("eval")(eval_cmd)
    app.command("export")(export_cmd)


@returns("council.domain.results.export:ThreadExport")
def export_cmd(
    thread: Annotated[str, typer.Option("--thread", help="The thread (id or unique prefix).")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="json: the decision record (a thread made by import: its council-debate-v1 "
            "record); markdown: the decision record for reading; debate: council-debate-v1.",
        ),
    ] = "json",
    out: Annotated[
        Path | None, typer.Option("--out", help="Write to this new file instead of stdout.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Export a thread: its decision record (question, evidence, propositions, runs, claims,
    groups, consolidations with each rule's reason and the replay hash, retractions, stance
    changes, cost) as JSON or Markdown, or a recorded debate (council-debate-v1). Reads only;
    the same ledger gives the same bytes."""
    from council.services.export_record import export_thread, record_json

    if out is not None and out.exists():
        raise BadInput(f"{out} exists: export writes a new file")
    result = export_thread(uow(), thread, fmt)
    if result.record is not None:
        text = json.dumps(result.record, ensure_ascii=False, sort_keys=True) + "\n"
    elif result.decision_record is not None:
        text = record_json(result.decision_record)
    else:
        text = result.markdown or ""
    if out is not None:
        try:
            with out.open("x", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            raise BadInput(f"cannot write {out}: {exc.strerror or exc}") from None
        result = result.model_copy(update={"out": str(out)})
    if as_json:
        emit(result, True)
    elif out is not None:
        console.print(f"wrote {inert(out)}")
    elif result.record is not None:
        console.print_json(without_controls(text))
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
