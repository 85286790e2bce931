"""`council reentry | lint`: resume from the frontier; check words against the ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from council.cli.common import JsonOpt, touched_memory, uow
from council.cli.output import console, emit, fetch_command, inert, returns, without_controls
from council.errors import BadInput
from council.files import read_regular


@returns("council.domain.reentry:ReentryPacket")
def reentry_cmd(
    thread: Annotated[str, typer.Option("--thread", help="Thread id.")],
    fmt: Annotated[str, typer.Option("--format", help="markdown or json.")] = "markdown",
    budget: Annotated[int, typer.Option("--budget", help="Token budget (500..200000).")] = 4000,
    blind: Annotated[bool, typer.Option("--blind", help="Redact stances (the agents' briefing).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """The reentry packet: what is still open, contested or awaiting evidence."""
    from council.domain.reentry_markdown import render_markdown
    from council.services.reentry import reentry_packet

    if fmt not in ("markdown", "json"):
        raise BadInput(f"invalid format: {fmt!r} (expected markdown or json)")
    packet = reentry_packet(uow(), thread, budget=budget, blind=blind)
    touched_memory([item.model_dump() for item in packet.memory])
    if as_json or fmt == "json":
        emit(packet.model_dump(mode="json"), True)
    else:
        typer.echo(without_controls(render_markdown(packet, fetch_command)))


@returns("council.domain.results.reentry:LintReport")
def lint_cmd(
    text_file: Annotated[Path, typer.Argument(help="A text or markdown file ('-' for stdin).")],
    thread: Annotated[str, typer.Option("--thread", help="Thread whose ledger backs the words.")],
    as_json: JsonOpt = False,
) -> None:
    """Flag concluded / rejected / settled / preferred / set aside without a durable transition."""
    import sys

    from council.domain.validate import MAX_LINT_CHARS
    from council.services.reentry import lint_text

    limit = 4 * MAX_LINT_CHARS  # bytes: UTF-8 takes at most 4 a character
    if str(text_file) == "-":
        data = sys.stdin.buffer.read(limit + 1)
        if len(data) > limit:
            raise BadInput(f"the text on stdin is larger than {limit} bytes")
    else:
        data = read_regular(text_file, "text file", limit)
    text = data.decode("utf-8", errors="replace")
    if len(text) > MAX_LINT_CHARS:
        raise BadInput(f"the text is too long: {len(text)} characters (limit {MAX_LINT_CHARS})")
    result = lint_text(uow(), thread, text)

    def render(data: dict[str, Any]) -> None:
        if data["ok"]:
            console.print("[green]no unbacked epistemic words[/]")
        for f in data["findings"]:
            console.print(f"[red]✗[/] {inert(f['reason'])}\n    {inert(f['sentence'])}")

    emit(result, as_json, render)
    if not result.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("reentry")(reentry_cmd)
    app.command("lint")(lint_cmd)
