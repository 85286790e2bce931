"""`council ask "QUESTION"`: one command from a question to what the council concluded."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from council.cli.common import JsonOpt, actor, council
from council.cli.output import console, emit, err_console, inert, returns
from council.cli.render import BUDGET_HELP, CONTROLS_HELP, budget_line, reservation_line, short
from council.domain.budget import runs_per_agent
from council.domain.vocabulary import DEFAULT_COUNCIL

if TYPE_CHECKING:  # the result types import pydantic: a command's start loads them only when it renders
    from council.domain.results.answer import Answer, AnswerGroup
from council.errors import BadInput

SETTLE_S = 60.0  # after the runs: how long to wait for the committer's decisions


@returns("council.domain.results.ask:AskOutcome")
def ask_cmd(
    question: Annotated[str, typer.Argument(help="The question (it becomes the thread's objective).")],
    thread: Annotated[str | None, typer.Option("--thread", help="Continue this thread instead.")] = None,
    evidence: Annotated[
        list[str] | None,
        typer.Option("--evidence", help="A file, or an http(s) URL to fetch (repeatable)."),
    ] = None,
    agents: Annotated[str, typer.Option("--agents", help="Comma-separated profile names.")] = ",".join(
        DEFAULT_COUNCIL
    ),
    rounds: Annotated[
        int,
        typer.Option("--rounds", help="Deliberative rounds after the proposing and cross-review rounds."),
    ] = 2,
    simulate: Annotated[
        str | None,
        typer.Option("--simulate", help="auto, always or never (default: COUNCIL_SIMULATE, else auto)."),
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the runs.")] = 900,
    budget_usd: Annotated[float | None, typer.Option("--budget-usd", help=BUDGET_HELP)] = None,
    controls: Annotated[bool, typer.Option("--controls", help=CONTROLS_HELP)] = False,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option", help="LABEL=TEXT: the question is multiple-choice, its options rivals (repeatable)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Ask the council: open a thread (or ask on one: the question is recorded on it), attach
    the evidence, run the council protocol with live progress — each agent proposes its own
    answer blind, judges the others' propositions blind (cross-review), then deliberates —
    and print the answer first (what the council established, or its live alternatives with
    their independent support), each agent's own summary, then each proposition, consolidated
    or not and why, its groups, each agent's stance, what is contested, who failed and why,
    and the cost. Exit 1 when any run failed."""
    from council.services.ask import Question, ask, outcome, pending_consolidation
    from council.services.evidence import EvidenceInput

    if not math.isfinite(timeout) or timeout <= 0:
        raise BadInput(f"--timeout must be a positive number of seconds, got {timeout}")
    given = tuple(
        EvidenceInput(url=e) if e.startswith(("http://", "https://")) else EvidenceInput(file=e)
        for e in evidence or []
    )
    names = tuple(a.strip() for a in agents.split(",") if a.strip())
    wired = council()
    asked = ask(
        wired.uow,
        wired.required_scheduler(),
        Question(
            text=question,
            agents=names,
            rounds=rounds,
            thread=thread,
            evidence=given,
            budget_usd=budget_usd,
            controls=controls,
            options=tuple(option or ()),
        ),
        actor=actor(),
        simulate=simulate,
    )
    from council.cli.run_cmds import wait_for_runs

    out = console if not as_json else err_console
    created = asked.dispatch
    out.print(
        f"thread {short(asked.thread_id)}{' (new)' if asked.created_thread else ''}: "
        f"{len(names)} agent(s) × {created.rounds} round(s), dispatch {short(created.dispatch_id)}",
        markup=False,
        highlight=False,
    )
    if created.reservation is not None:
        out.print(inert(reservation_line(created.reservation.model_dump(mode="json"))), highlight=False)
    expected = len(names) * runs_per_agent(created.rounds, controls=created.controls, mode=created.mode)
    runs = wait_for_runs(created, expected, timeout, out)
    complete = len(runs) == expected and all(r.status in ("succeeded", "failed") for r in runs)
    settled = False
    if complete:
        deadline = time.monotonic() + SETTLE_S
        while not (settled := pending_consolidation(wired.uow, asked.thread_id) == 0):
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
    result = outcome(wired.uow, asked.thread_id, created.dispatch_id, settled=settled)
    emit(result, as_json, _render)
    if not complete:
        err_console.print(f"the runs did not all end within {timeout:g} s", markup=False, highlight=False)
        raise typer.Exit(1)
    if result.failed:
        err_console.print(
            f"{result.failed} run(s) failed: {result.answered} of {len(result.agents)} agents answered",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(1)


def _render(data: dict[str, Any]) -> None:
    say = console.print
    say(f"[bold]{inert(data['question'])}[/]", highlight=False)
    from council.domain.results.answer import Answer

    _render_answer(Answer.model_validate(data["answer"]))
    if data["summaries"]:
        say("each agent, in its own words:", highlight=False)
        for s in data["summaries"]:
            said = s["summary"] if len(s["summary"]) <= 400 else s["summary"][:399] + "…"
            say(inert(f"  {s['agent']} (round {s['round']}): {said}"), highlight=False)
    say("propositions:", highlight=False)
    if not data["propositions"]:
        say("no proposition was judged by this ask", highlight=False)
    for p in data["propositions"]:
        mark = "[green]✓[/]" if p["consolidated"] else "[red]✗[/]"
        content = " ".join(p["content"].split())
        say(f"{mark} {short(p['version_id'])} {inert(content[:200])}", highlight=False)
        say(f"    {inert(p['why'])}", highlight=False)
        groups = " · ".join(f"{g['kind']} [{', '.join(g['agents'])}]" for g in p["groups"])
        if groups:
            say(f"    groups: {inert(groups)}", highlight=False)
        for s in p["stances"]:
            line = f"    {s['agent']} {s['claim_type']} {s['confidence']:.2f}"
            say(inert(line + (f" — {s['rationale']}" if s["rationale"] else "")), highlight=False)
    if data["contested"]:
        say(f"contested: {', '.join(short(c) for c in data['contested'])}", highlight=False)
    for f in data["failures"]:
        say(inert(f"failed: {f['agent']} (round {f['round']}): {f['error']}"), highlight=False)
    if not data["settled"]:
        say("[yellow]the committer had not decided everything yet; `council node list` later[/]")
    cost = data["cost"]
    say(
        f"{data['answered']} of {len(data['agents'])} agents answered; tokens {cost['prompt_tokens']} in, "
        f"{cost['completion_tokens']} out; ${cost['usd']:.4f}",
        highlight=False,
    )
    if data.get("reservation"):
        reserved = data["reservation"]["usd"]
        say(f"reserved ${reserved:.4f} before sending; billed ${cost['usd']:.4f}", highlight=False)
    say(f"budget: {budget_line(data['budget'])}", highlight=False)
    say("read more: " + "; ".join(data["next"]), highlight=False)


def _render_answer(answer: Answer) -> None:
    """The answer first: what the council established, or that it established nothing, and
    the live alternatives with their independent support and disputes."""
    say = console.print
    if answer.established:
        content = inert(_line(answer.content or ""))
        say(f"[green]answer[/] {short(answer.version_id)}: {content}", highlight=False)
        say(f"    established on {_groups(answer.support_groups)}", highlight=False)
    else:
        more = ": the live alternatives" if answer.alternatives else ""
        say(f"[yellow]no established answer[/]{more}")
    if answer.conflict:
        say(f"    [yellow]{inert(answer.conflict)}[/]", highlight=False)
    for alt in answer.alternatives:
        kind = "rival" if alt.rival else "also consolidated" if alt.consolidated else "alternative"
        say(f"  {kind} {short(alt.version_id)}: {inert(_line(alt.content))}", highlight=False)
        held = f"support {_groups(alt.support_groups)}"
        if alt.dispute_groups:
            held += f"; disputed by {_groups(alt.dispute_groups)}"
        say(f"    {held}", highlight=False)


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 200 else flat[:199] + "…"


def _groups(groups: list[AnswerGroup]) -> str:
    if not groups:
        return "no independent group"
    named = [", ".join(g.agents) + (" (endorsing a rival)" if g.derived_runs else "") for g in groups]
    return f"{len(groups)} independent group(s): " + inert(" · ".join(named))


def register(app: typer.Typer) -> None:
    app.command("ask")(ask_cmd)
