"""What the documentation names exists (README.md and docs/**/*.md).

A reader follows the docs into the tree: every repository path they name is there,
every relative link lands on a file, every Python module (``council.x.y``, with an
attribute after it if one is named) resolves, every ``council <command>`` is a command
of the Typer app, every ``COUNCIL_*`` variable they name is read somewhere, and every
``COUNCIL_*`` variable the code reads is in the configuration page. A rename that
leaves the docs behind fails here.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import typer.main

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CONFIGURATION = ROOT / "docs" / "operations" / "configuration.md"
# Top-level entries of the tree a path in the docs may start with.
TOP = ("council/", "workers/", "tests/", "benchmarks/", "migrations/", "schema/", "deploy/", "docs/", ".ci/")
TOP_FILES = ("Makefile", "pyproject.toml", "README.md")
CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
MODULE = re.compile(r"^(council|workers|benchmarks|tests)(\.[A-Za-z_][A-Za-z0-9_]*)+$")
VARIABLE = re.compile(r"\bCOUNCIL_[A-Z0-9_]*[A-Z0-9]")
# Files an operator writes, which the tree does not hold.
WRITTEN_BY_YOU = {"deploy/.env"}
PLACEHOLDER = re.compile(r"[<>{}*…$]|\bNAME\b|\.\.\.")


def spans(text: str) -> Iterator[str]:
    """Inline code spans, and the lines of fenced blocks."""
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            yield line.strip()
        else:
            yield from CODE_SPAN.findall(line)


def documents() -> Iterator[tuple[Path, str]]:
    for path in DOCS:
        yield path, path.read_text(encoding="utf-8")


def named_paths(text: str) -> set[str]:
    found = set()
    for span in spans(text):
        for word in re.split(r"[\s,;()\"'`=]+", span):
            word = re.sub(r"(::\w.*|:\d+.*)$", "", word).rstrip(".:")
            if word.startswith(TOP) or word in TOP_FILES:
                found.add(word)
    return found


def expand(path: str) -> list[str]:
    """``a.{py,sql}`` names two files."""
    match = re.search(r"\{([^}]*)\}", path)
    if not match:
        return [path]
    return [path[: match.start()] + part + path[match.end() :] for part in match.group(1).split(",")]


def missing_paths(path: Path, text: str) -> list[str]:
    missing = []
    for named in sorted(named_paths(text)):
        for one in expand(named):
            if PLACEHOLDER.search(one) or one.startswith(".tools/") or one in WRITTEN_BY_YOU:
                continue
            if not (ROOT / one).exists():
                missing.append(f"{path.relative_to(ROOT)}: path {one}")
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file) if file else path
        if not linked.exists():
            missing.append(f"{path.relative_to(ROOT)}: link {target}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text(encoding="utf-8")):
            missing.append(f"{path.relative_to(ROOT)}: link {target} (no such heading)")
    return missing


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as -."""
    headings = [line.lstrip("#").strip() for line in text.splitlines() if re.match(r"^#{1,6} ", line)]
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


@cache
def task_names() -> frozenset[str]:
    """The Celery task names the code defines (``council.execute_run``): names, not modules."""
    names: set[str] = set()
    for source in (ROOT / "council").rglob("*.py"):
        names.update(re.findall(r"[\"'](council\.[a-z_]+)[\"']", source.read_text(encoding="utf-8")))
    return frozenset(names)


def defined_names(origin: str) -> set[str]:
    tree = ast.parse(Path(origin).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def resolves(dotted: str) -> bool:
    """A module, or a module and a name defined in it (found in its source, not imported)."""
    if dotted in task_names():
        return True
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        spec = find_spec(".".join(parts[:cut]))
        if spec is None:
            continue
        rest = parts[cut:]
        if not rest:
            return True
        if spec.origin is None or not spec.origin.endswith(".py"):
            return False
        return rest[0] in defined_names(spec.origin)
    return False


def named_modules(text: str) -> set[str]:
    found = set()
    for span in spans(text):
        for word in re.split(r"[\s,;()\"'`=\[\]]+", span):
            word = word.rstrip(".:")
            if MODULE.match(word) and not word.endswith((".py", ".md", ".sql", ".json")):
                found.add(word)
    return found


def find_spec(name: str) -> importlib.machinery.ModuleSpec | None:
    try:
        return importlib.util.find_spec(name)
    except (ModuleNotFoundError, ValueError):  # a parent that is a module, not a package
        return None


@cache
def cli() -> Any:
    """The whole command tree, every command module registered (as `council --help` does)."""
    from council.cli.main import app, register_commands

    register_commands()
    return typer.main.get_command(app)


def subcommands(command: Any) -> dict[str, Any] | None:
    """A group's commands by name; None for a command that is not a group."""
    commands = getattr(command, "commands", None)
    return commands if isinstance(commands, dict) else None


def command_words(span: str) -> list[list[str]] | None:
    """``council evidence challenge\\|invalidate ID`` → [["evidence"], ["challenge", "invalidate"]]."""
    span = re.sub(r"^\$ ", "", span.strip())
    if not span.startswith("council "):
        return None
    words = []
    for token in span.split()[1:]:
        alternatives = [a for a in re.split(r"\\?\|", token) if a]
        if not alternatives or not all(re.fullmatch(r"[a-z][a-z0-9-]*", a) for a in alternatives):
            break
        words.append(alternatives)
    return words


def unknown_command(words: list[list[str]]) -> str | None:
    """The first word that is not a command where one is expected: the words name commands
    while the command before them is a group; after a command that is not, they are its arguments."""
    current = cli()
    for alternatives in words:
        commands = subcommands(current)
        if commands is None:
            return None
        for word in alternatives:
            if word not in commands:
                return word
        current = commands[alternatives[0]]
    return None


def test_every_path_and_link_the_docs_name_exists() -> None:
    missing = [miss for path, text in documents() for miss in missing_paths(path, text)]
    assert not missing, "\n".join(missing)


def test_every_module_the_docs_name_resolves() -> None:
    stale = [
        f"{path.relative_to(ROOT)}: {name}"
        for path, text in documents()
        for name in sorted(named_modules(text))
        if not resolves(name)
    ]
    assert not stale, "\n".join(stale)


def test_every_council_command_the_docs_name_exists() -> None:
    stale = []
    for path, text in documents():
        for span in spans(text):
            words = command_words(span)
            if words:
                word = unknown_command(words)
                if word is not None:
                    stale.append(f"{path.relative_to(ROOT)}: {word!r} in `{span}`")
    assert not stale, "\n".join(stale)


def variables_read(where: list[Path]) -> set[str]:
    found: set[str] = set()
    for top in where:
        for source in top.rglob("*"):
            if source.is_file() and source.suffix in {".py", ".sh", ".yml", ".yaml", ""}:
                found.update(VARIABLE.findall(source.read_text(encoding="utf-8", errors="replace")))
    return found


def test_every_variable_the_code_reads_is_in_the_configuration_page() -> None:
    documented = set(VARIABLE.findall(CONFIGURATION.read_text(encoding="utf-8")))
    read = variables_read([ROOT / "council"])
    # COUNCIL_PROFILE_ is the prefix of the per-profile variables, documented as a pattern
    undocumented = sorted(v for v in read - documented if not v.startswith("COUNCIL_PROFILE"))
    assert not undocumented, f"read by the code, missing from {CONFIGURATION.name}: {undocumented}"


def test_every_variable_the_docs_name_is_read_somewhere() -> None:
    tree = [ROOT / d for d in ("council", "tests", "benchmarks", "deploy", ".ci")]
    read = variables_read([d for d in tree if d.exists()]) | set(
        VARIABLE.findall((ROOT / "Makefile").read_text(encoding="utf-8"))
    )
    stale = sorted(
        f"{path.relative_to(ROOT)}: {v}"
        for path, text in documents()
        for v in set(VARIABLE.findall(text))
        if v not in read and not v.startswith("COUNCIL_PROFILE_")
    )
    assert not stale, "\n".join(stale)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("See `council/processes.py`.", "path"),
        ("The unit of work is `council.ledger.uow`.", "module"),
        ("The demo is `council.demo.runner`.", "module"),
        ("Run `council thread frobnicate --json`.", "command"),
        ("[the guide](guide/nowhere.md)", "path"),
        ("[profiles](guide/agent-runs.md#no-such-heading)", "path"),
    ],
)
def test_a_stale_name_is_caught(text: str, kind: str) -> None:
    # Given a document naming something that is not there, Then the matching check finds it
    doc = ROOT / "docs" / "example.md"
    if kind == "path":
        assert missing_paths(doc, text)
    elif kind == "module":
        assert not all(resolves(name) for name in named_modules(text))
    else:
        assert any(
            (words := command_words(span)) and unknown_command(words) is not None for span in spans(text)
        )
