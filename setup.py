"""Packaging beyond pyproject.toml: the Alembic migrations ship inside the council package.

The source tree keeps them at ``migrations/``, where the docs, the tests and every new
migration name them; a built wheel carries them as ``council/migrations/``, which
``council.ledger.migrate`` looks for first. So the wheel installs one top-level name,
``council``, and no generic one (``migrations``, ``benchmarks``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads migrations/ where it is
        shutil.copytree(
            Path(__file__).parent / "migrations",
            Path(self.build_lib) / "council" / "migrations",
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
            dirs_exist_ok=True,
        )


setup(cmdclass={"build_py": BuildPy})
