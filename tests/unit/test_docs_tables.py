"""Docs are for people: no table cell in README.md or docs/**/*.md holds more than
``MAX_CELL`` characters of Markdown. A finding that needs more is prose or a list under the
table, where it can be read; a table is for what can be compared at a glance."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MAX_CELL = 300
# A cell ends at a pipe that is not escaped (GitHub's tables: `\|` is a pipe inside a cell).
CELL_BORDER = re.compile(r"(?<!\\)\|")


def cells(text: str) -> Iterator[tuple[int, str]]:
    """(line number, cell) of every table cell outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        row = line.strip()
        if fenced or not row.startswith("|"):
            continue
        for cell in CELL_BORDER.split(row.strip("|")):
            yield number, cell.strip()


def too_long(text: str) -> list[tuple[int, int]]:
    """(line number, length) of every cell over MAX_CELL characters."""
    return [(number, len(cell)) for number, cell in cells(text) if len(cell) > MAX_CELL]


def test_no_table_cell_in_the_docs_is_over_300_characters() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: a cell of {length} characters"
        for path in DOCS
        for number, length in too_long(path.read_text(encoding="utf-8"))
    ]
    assert not found, "\n".join(found)


def test_a_long_cell_is_caught_and_nothing_else() -> None:
    long, fits = "x" * (MAX_CELL + 1), "y" * MAX_CELL
    text = "\n".join(
        [
            "| a | b |",
            "|---|---|",
            f"| `x \\| y` | {fits} |",  # an escaped pipe is inside its cell
            f"| short | {long} |",
            "```",
            f"| in a code block | {long} |",
            "```",
            f"a paragraph of {long}",
        ]
    )
    assert too_long(text) == [(4, MAX_CELL + 1)]
