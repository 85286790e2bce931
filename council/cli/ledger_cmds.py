"""`council thread | evidence | events`: the ledger's containers and sources."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any

import typer

from council.cli import render
from council.cli.common import JsonOpt, actor, record, uow
from council.cli.output import console, emit, inert, returns
from council.cli.tables import Column, cell, table

thread_app = typer.Typer(
    help="Open and inspect threads (a question and its objective).", no_args_is_help=True
)
evidence_app = typer.Typer(
    help="Attach and inspect shared, content-addressed evidence.", no_args_is_help=True
)


@thread_app.command("create")
@returns("council.domain.results.threads:ThreadCreated")
def thread_create(
    title: Annotated[str, typer.Option("--title", help="Short title of the question.")],
    objective: Annotated[str, typer.Option("--objective", help="What the council is trying to establish.")],
    review: Annotated[str, typer.Option("--review", help=REVIEW_HELP)] = "auto",
    as_json: JsonOpt = False,
) -> None:
    """Open a thread with its main branch."""
    from council.services.threads import create_thread

    result = create_thread(uow(), title=title, objective=objective, actor=actor(), review=review)
    emit(
        result,
        as_json,
        _thread_record("thread created", ["id", "title", "objective", "main_branch_id", "rule_set_id"]),
    )


REVIEW_HELP = (
    "How an opened retraction proposal is reviewed: auto (a review dispatch at once), "
    "manual (people vote and adjudicate) or a delay before the review dispatch (90s, 10m, 2h)."
)


AGENTS_HELP = (
    "Who reviews: agent profiles, comma-separated (a,b), or 'thread' (the default: the "
    "profiles that worked the thread). Never a simulated voter beside real ones."
)


def cost_line(cost: Mapping[str, object]) -> str:
    """A thread's cost in one line: USD over the priced runs, tokens, and how many runs
    had no price (their cost is unknown, so the USD is a lower bound)."""
    line = (
        f"${cost['usd']:.4f} over {cost['runs_priced']} priced run(s); "
        f"{cost['prompt_tokens']} prompt + {cost['completion_tokens']} completion tokens"
    )
    if cost["runs_unpriced"]:
        reasons = cost.get("unpriced_reasons")
        why = "; ".join(str(r) for r in reasons) if isinstance(reasons, list) and reasons else "no price"
        line += f"; {cost['runs_unpriced']} run(s) unpriced ({why}: cost unknown)"
    return line


def _thread_record(title: str, keys: list[str]) -> Callable[[Any], None]:
    table = record(title, keys)

    def shown(data: Any) -> None:
        table(data)
        console.print(f"review: {inert(data['review']['description'])}")
        if data.get("cost") is not None:
            console.print(f"cost: {cost_line(data['cost'])}")
        if data.get("budget") is not None:
            console.print(f"budget: {render.budget_line(data['budget'])}")

    return shown


@thread_app.command("review")
@returns("council.domain.results.threads:ReviewSettings")
def thread_review(
    thread_id: str,
    set_to: Annotated[str | None, typer.Option("--set", help=REVIEW_HELP)] = None,
    agents: Annotated[str | None, typer.Option("--agents", help=AGENTS_HELP)] = None,
    reason: Annotated[str, typer.Option("--reason", help="Why (recorded with the change).")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Show (or, with --set or --agents, change) how the thread's retraction proposals
    are reviewed and by whom, with its history."""
    from council.services.threads import review_settings, set_review

    if set_to is None and agents is None:
        result = review_settings(uow(), thread_id)
    else:
        result = set_review(uow(), thread_id, set_to, agents=agents, actor=actor(), reason=reason)

    def shown(data: dict[str, Any]) -> None:
        console.print(f"thread {data['thread_id']}: [bold]{inert(data['current']['description'])}[/]")
        for item in data["history"]:
            why = f" — {item['reason']}" if item["reason"] else ""
            who = ",".join(item["agents"]) if item["agents"] else "thread"
            line = f"{item['review']:<8} {who:<16} {item['actor']}{why}"
            console.print(f"  {item['set_at']}  {inert(line)}")

    emit(result, as_json, shown)


@thread_app.command("budget")
@returns("council.domain.results.budgets:ThreadBudget")
def thread_budget_cmd(
    thread_id: str,
    usd: Annotated[float | None, typer.Option("--usd", help="The thread's budget in USD.")] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Remove the thread's budget.")] = False,
    reason: Annotated[str, typer.Option("--reason", help="Why (recorded with the change).")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Show (or, with --usd or --clear, change) the thread's budget: what is spent, what its
    dispatches have reserved, what remains, and every change."""
    from council.services.budgets import set_thread_budget, thread_budget

    if usd is None and not clear:
        result = thread_budget(uow(), thread_id)
    else:
        result = set_thread_budget(uow(), thread_id, usd, clear=clear, actor=actor(), reason=reason)

    def shown(_: object) -> None:
        console.print(f"thread {result.thread_id}: {render.budget_line(result.state.model_dump())}")
        for item in result.history:
            amount = "none" if item.usd is None else f"${item.usd:.6f}"
            why = f" — {item.reason}" if item.reason else ""
            line = f"{amount:<14} {item.actor}{why}"
            console.print(f"  {item.set_at}  {inert(line)}")

    emit(result, as_json, shown)


@thread_app.command("show")
@returns("council.domain.results.threads:ThreadShown")
def thread_show(thread_id: str, as_json: JsonOpt = False) -> None:
    """A thread with counts of what it holds and what its runs cost (tokens, USD)."""
    from council.services.threads import show_thread

    result = show_thread(uow(), thread_id)
    emit(
        result,
        as_json,
        _thread_record("thread", ["id", "title", "objective", "main_branch_id", "counts", "created_at"]),
    )


@thread_app.command("list")
@returns("council.domain.results.threads:ThreadList")
def thread_list(as_json: JsonOpt = False) -> None:
    """Every thread, oldest first: its status (running, open, resolved or empty), its runs
    and what they cost."""
    from council.services.threads import list_threads

    columns: list[Column] = [
        ("id", "thread", 8),
        ("status", "status", 8),
        ("runs", "runs", 4),
        ("cost_usd", "usd", 8),
        ("created_at", "created", 19),
        ("title", "title", 0),
    ]
    emit(list_threads(uow()), as_json, table("threads", columns, _thread_cell))


def _thread_cell(item: Mapping[str, object], key: str) -> str:
    if key == "cost_usd":
        unpriced = "+" if item.get("runs_unpriced") else ""  # a lower bound: some runs' cost is unknown
        return f"{float(str(item['cost_usd'])):.4f}{unpriced}"
    return cell(item, key)


@evidence_app.command("add")
@returns("council.domain.results.evidence:EvidenceAdded")
def evidence_add(
    thread: Annotated[str, typer.Option("--thread", help="Thread id.")],
    text: Annotated[str | None, typer.Option("--text", help="Evidence text.")] = None,
    file: Annotated[str | None, typer.Option("--file", help="Path of a UTF-8 text file.")] = None,
    url: Annotated[
        str | None,
        typer.Option("--url", help="An http(s) URL, fetched within a total deadline and a size cap."),
    ] = None,
    title: Annotated[
        str | None, typer.Option("--title", help="Title (default: first line, file name or URL).")
    ] = None,
    no_fetch: Annotated[
        bool, typer.Option("--no-fetch", help="With --url: store the reference only.")
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help="With --url: seconds for the whole fetch, redirects included "
            "(default: COUNCIL_FETCH_TIMEOUT_S, else 15).",
        ),
    ] = None,
    allow_private: Annotated[
        bool,
        typer.Option(
            "--allow-private",
            help="With --url: also fetch from loopback, private and link-local addresses.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Attach evidence; the same content is one evidence row everywhere."""
    from council.services.evidence import EvidenceInput, add_evidence

    given = EvidenceInput(
        text=text,
        file=file,
        url=url,
        fetch=not no_fetch,
        title=title,
        timeout_s=timeout,
        allow_private=allow_private,
    )
    result = add_evidence(uow(), thread, given, actor=actor())
    emit(result, as_json, record("evidence", ["id", "sha256", "title", "new_content", "already_in_thread"]))


@evidence_app.command("show")
@returns("council.domain.results.evidence:EvidenceShown")
def evidence_show(evidence_id: str, as_json: JsonOpt = False) -> None:
    """One evidence item in full: content, validity and its history, threads."""
    from council.services.evidence import show_evidence

    result = show_evidence(uow(), evidence_id)
    emit(result, as_json, render.evidence)


@returns("council.domain.results.events:EventList")
def events_cmd(
    thread: Annotated[str, typer.Option("--thread", help="Thread id.")],
    after: Annotated[int, typer.Option("--after", help="Only events with a larger id.")] = 0,
    limit: Annotated[int | None, typer.Option("--limit", help="Page size (default: all).", min=1)] = None,
    as_json: JsonOpt = False,
) -> None:
    """The thread's append-only event log, in order."""
    from council.services.threads import list_events

    events = list_events(uow(), thread, after=after, limit=limit)
    columns: list[Column] = [
        ("id", "#", 6),
        ("created_at", "created", 19),
        ("kind", "kind", 25),
        ("subject_id", "subject", 8),
        ("actor", "actor", 0),
    ]
    emit(events, as_json, table("events", columns))


def register(app: typer.Typer) -> None:
    app.add_typer(thread_app, name="thread")
    app.add_typer(evidence_app, name="evidence")
    app.command("events")(events_cmd)
