"""The wheel installs one top-level name, ``council``: the Celery tasks are
``council.workers``, the migrations ship as ``council/migrations`` (setup.py), and
benchmarks/ and tests/ run from the source tree. So nothing may import the names a wheel
does not have, and no command line may name them."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_INSTALLED = ("workers", "migrations", "benchmarks")
# Where code that runs from an installed wheel lives: the package and the migrations it carries.
INSTALLED = (ROOT / "council", ROOT / "migrations")


def test_the_wheel_packages_council_only() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["setuptools"]["packages"]["find"]["include"] == ["council*"]


def test_installed_code_imports_no_top_level_name_a_wheel_lacks() -> None:
    wrong = []
    for top in INSTALLED:
        for path in sorted(top.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                wrong += [
                    f"{path.relative_to(ROOT)}: import {n}" for n in names if n.split(".")[0] in NOT_INSTALLED
                ]
    assert not wrong, "\n".join(wrong)


def test_no_celery_command_or_include_names_the_old_workers_package() -> None:
    # `celery -A workers.app` or include=["workers.tasks"] would fail in an installed wheel
    old = re.compile(r"(?<![\w.])workers\.(app|tasks|coalesce|metrics_server|retrying)\b")
    files = [p for top in (ROOT / "council", ROOT / "deploy") for p in top.rglob("*") if p.is_file()]
    wrong = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in sorted(files)
        if path.suffix in {".py", ".yml", ".yaml", ""}
        for match in old.finditer(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not wrong, "\n".join(wrong)
