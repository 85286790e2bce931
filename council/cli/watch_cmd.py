"""`council watch`: runs, claims and independence groups of a thread, live."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Annotated, Any
from uuid import UUID

import typer

from council.cli.common import JsonOpt, uow
from council.cli.output import console, emit, err_console, inert, returns, without_controls
from council.cli.render import short


@returns("council.domain.results.events:Watched")
def watch_cmd(
    thread: Annotated[str, typer.Option("--thread", help="Thread id.")],
    timeout: Annotated[float | None, typer.Option("--timeout", help="Stop after this many seconds.")] = None,
    since: Annotated[int, typer.Option("--since", help="Start after this event id (default: now).")] = -1,
    interval: Annotated[float, typer.Option("--interval", help="Polling interval in seconds.")] = 1.0,
    as_json: JsonOpt = False,
) -> None:
    """Follow the thread's event log (each event once settled, none skipped); at each
    claim, the node's groups as they were then."""
    from council.domain.results.events import Watched
    from council.services.threads import show_thread, tail_events, tail_from

    thread_id = show_thread(uow(), thread).id
    cursor = tail_from(uow(), thread_id, after=None if since < 0 else since)
    out = err_console if as_json else console
    start = "now" if since < 0 else f"event #{since}"
    out.print(f"watching thread {thread_id} from {start} (Ctrl-C to stop)")
    collected: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    skipped: list[Mapping[str, object]] = []
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while deadline is None or time.monotonic() < deadline:
            page = tail_events(uow(), thread_id, cursor)
            cursor = page.cursor
            events = [e.json_document() for e in page.events]
            found, passed = _steps_of(thread_id, events) if events else ({}, {})
            for event in events:
                collected.append(event)
                step = found.get(event["id"])
                if event["id"] in passed:
                    skipped.append(passed[event["id"]])
                    out.print(
                        f"#{event['id']} skipped: a malformed {inert(event['kind'])} event "
                        f"({inert(str(passed[event['id']]['reason']))})",
                        highlight=False,
                    )
                    continue
                if step is None:
                    subject = event["subject_id"] or ""
                    out.print(
                        f"#{event['id']} {inert(event['kind']):<25} {inert(short(subject)):<8} "
                        f"{inert(event['actor'])}",
                        highlight=False,
                    )
                    continue
                steps.append(step)
                for line in describe_step(step):
                    out.print(without_controls(line), highlight=False, markup=False)
            if not page.full:
                time.sleep(interval)
    except KeyboardInterrupt:
        pass
    last = {s["node_version_id"]: s["groups"] for s in steps}
    watched = Watched(thread_id=thread_id, events=collected, steps=steps, groups=last, skipped=skipped)
    emit(watched, as_json, lambda d: None)


def _steps_of(
    thread_id: UUID, events: list[dict[str, Any]]
) -> tuple[dict[int, dict[str, Any]], dict[int, Mapping[str, object]]]:
    """The formation step of each claim among ``events``, and each malformed claim event
    passed over, by event id (settled order is not id order: the steps are read from the
    page's lowest id on)."""
    from council.services.formation import formation

    ids = {e["id"] for e in events}
    found = formation(uow(), thread_id, after=min(ids) - 1).json_document()
    steps = {s["event_id"]: s for s in found["steps"] if s["event_id"] in ids}
    return steps, {s["event_id"]: s for s in found["skipped"] if s["event_id"] in ids}


LINKS = {
    "exposure": "was shown the stance of",
    "parent": "shares lineage (parent) with",
    "similar_input": "saw similar input to",
    "shared_evidence": "cited the same evidence as",
}


def describe_step(step: dict[str, Any]) -> list[str]:
    """A claim and the groups at that claim, for a person: who said what on which
    node, how the claiming run joined earlier groups, and the groups then."""
    head = (
        f"#{step['event_id']} {step['agent']} ({step['provider']}, run {step['run_id'][:8]}) "
        f"{step['stance']} on node {step['node_version_id'][:8]} at {step['confidence']:.2f}"
    )
    links = step["links"]
    if not links:
        how = "    independent of every earlier claimant: a group of its own"
    else:
        joined = "; ".join(f"{LINKS[k['kind']]} {k['agent']} {k['run_id'][:8]}" for k in links)
        how = (
            f"    {'merged ' + str(len(links)) + ' groups' if len(links) > 1 else 'joined a group'}: {joined}"
        )
    agents = step["run_agents"]

    def members(runs: list[str]) -> str:  # a group's runs by agent, then run id
        return ", ".join(f"{agents[r]} {r[:8]}" for r in sorted(runs, key=lambda r: (agents[r], r)))

    shape = "  ".join(f"{g['kind']}[{members(g['runs'])}]" for g in step["groups"])
    return [head, how, f"    groups then: {shape or '(none)'}"]


def register(app: typer.Typer) -> None:
    app.command("watch")(watch_cmd)
