"""`council watch`: runs, claims and independence groups of a thread, live."""

from __future__ import annotations

import time
from typing import Annotated, Any
from uuid import UUID

import typer

from council.cli.common import JsonOpt, uow
from council.cli.output import console, emit, err_console, returns


@returns("council.domain.results.events:Watched")
def watch_cmd(
    thread: Annotated[str, typer.Option("--thread", help="Thread id.")],
    timeout: Annotated[float | None, typer.Option("--timeout", help="Stop after this many seconds.")] = None,
    since: Annotated[int, typer.Option("--since", help="Start after this event id (default: now).")] = -1,
    interval: Annotated[float, typer.Option("--interval", help="Polling interval in seconds.")] = 1.0,
    as_json: JsonOpt = False,
) -> None:
    """Follow the thread's event log; after each claim, show the node's groups."""
    from council.domain.results.events import Watched
    from council.services.consolidation import groups
    from council.services.threads import latest_event_id, list_events, show_thread

    thread_id = show_thread(uow(), thread).id
    after = latest_event_id(uow(), thread_id) if since < 0 else since
    out = err_console if as_json else console
    out.print(f"watching thread {thread_id} from event #{after} (Ctrl-C to stop)")
    collected: list[dict[str, Any]] = []
    touched: dict[str, dict[str, Any]] = {}
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while deadline is None or time.monotonic() < deadline:
            for event in list_events(uow(), thread_id, after=after).json_document()["items"]:
                after = event["id"]
                collected.append(event)
                out.print(
                    f"#{event['id']} {event['kind']:<26} {event['actor']:<18} {event['subject_id'] or ''}"
                )
                version = event["payload"].get("node_version_id") if event["kind"] == "claim.added" else None
                if version:
                    found = groups(uow(), UUID(version)).json_document()
                    touched[version] = found
                    shape = ", ".join(f"{g['kind']}[{len(g['runs'])}]" for g in found["groups"])
                    out.print(f"    groups on {version[:8]}: {shape}")
            time.sleep(interval)
    except KeyboardInterrupt:
        pass
    emit(Watched(thread_id=thread_id, events=collected, groups=touched), as_json, lambda d: None)


def register(app: typer.Typer) -> None:
    app.command("watch")(watch_cmd)
