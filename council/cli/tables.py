"""The CLI's tables: a list result's ``items`` in 80 columns (``COLUMNS``, else the
terminal's width). Ids are their first 8 characters (accepted back wherever an id is
taken) and timestamps are whole, in columns that never wrap; a text column takes the
rest of the line and either wraps between words (``fold``) or is cut with an ellipsis."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from council.cli.output import console, inert
from council.cli.render import short, when

# key, header, width (0: the rest of the line, at least 8 columns), and for that column
# whether it wraps between words (True) rather than being cut with an ellipsis
Column = tuple[str, str, int] | tuple[str, str, int, bool]
Cell = Callable[[Mapping[str, object], str], str]


class _Shaped(NamedTuple):
    key: str
    header: str
    width: int
    fold: bool = False


def table(
    title: str, columns: Sequence[Column], shown: Cell | None = None, *, key: str = "items"
) -> Callable[[Mapping[str, object] | Sequence[Mapping[str, object]]], None]:
    """A renderer of ``data[key]`` (or of a list given itself) as a table within the
    terminal's width; ``shown`` gives an item's value as text (by default :func:`cell`)."""
    shaped = [_Shaped(*c) for c in columns]

    def render(data: Mapping[str, object] | Sequence[Mapping[str, object]]) -> None:
        from rich.table import Table

        items = data[key] if isinstance(data, Mapping) else data
        assert isinstance(items, list)
        out = Table(title=inert(title), title_justify="left", box=None, pad_edge=False, expand=True)
        for column in shaped:
            if column.width:  # a fixed column; the one of width 0 takes the rest of the line
                width = column.width
                out.add_column(column.header, no_wrap=True, overflow="ellipsis", width=width, min_width=width)
            elif column.fold:
                out.add_column(column.header, overflow="fold", ratio=1, min_width=8)
            else:
                out.add_column(column.header, no_wrap=True, overflow="ellipsis", ratio=1, min_width=8)
        for item in items:
            out.add_row(*(inert((shown or cell)(item, column.key)) for column in shaped))
        console.print(out)
        if not items:
            console.print("[dim](none)[/]")
        for line in footer(data) if isinstance(data, Mapping) else ():
            console.print(line, highlight=False)

    return render


def footer(data: Mapping[str, object]) -> list[str]:
    lines = []
    if data.get("truncated"):
        lines.append(f"[dim]the newest {data['limit']} shown; --limit to see more[/]")
    cost = data.get("cost")
    if isinstance(cost, dict) and (cost["prompt_tokens"] or cost["completion_tokens"] or cost["usd"]):
        lines.append(cost_text(cost))
    return lines


def cost_text(cost: Mapping[str, object]) -> str:
    unpriced = f" ({cost['unpriced']} run(s) unpriced: cost unknown)" if cost.get("unpriced") else ""
    return f"tokens {cost['prompt_tokens']} in, {cost['completion_tokens']} out; ${cost['usd']:.4f}{unpriced}"


def cell(item: Mapping[str, object], key: str) -> str:
    """A value as a table shows it: an id short, a timestamp to the second, a list joined,
    text on one line."""
    value = item.get(key)
    if key.endswith("id") or key in ("consolidated",):
        return short(value)
    if key.endswith("_at"):
        return when(value)
    if isinstance(value, list):
        short_ids = key.endswith(("ids", "runs"))  # a list of ids: each short, wrapped between them
        return ", ".join(short(v) if short_ids else str(v) for v in value)
    return "" if value is None else " ".join(str(value).split())
