"""The CLI's import budget (issue 19): `council --help` and a read such as
`council thread list --json` are started by scripts hundreds of times, so
neither may import what it does not need — no model gateway, broker, web
app, metrics or process tools (and `--help` not even pydantic or the
database driver). Each is run in a fresh interpreter against a migrated
database, and the modules it loaded are listed from ``sys.modules``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = (
    "litellm",
    "celery",
    "kombu",
    "fastapi",
    "starlette",
    "uvicorn",
    "httpx",
    "prometheus_client",
    "psutil",
    "alembic",
    "redis",
    "council.agents",
    "council.web",
    "council.adapters.celery_app",
    "council.ledger.committer",
    "council.ledger.apply_output",
)
PROBE = """
import json, sys
from council.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _loaded(args: list[str], db_url: str) -> tuple[int, set[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env.update(COUNCIL_DATABASE_URL=db_url, PYTHONPATH=str(REPO), NO_COLOR="1")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return int(report["code"] or 0), set(report["modules"]), done.stdout


def _heavy(modules: set[str], extra: tuple[str, ...] = ()) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in (*HEAVY, *extra)))


def test_help_imports_neither_the_heavy_modules_nor_pydantic_nor_the_database(db_url: str) -> None:
    code, modules, out = _loaded(["--help"], db_url)
    assert code == 0 and "thread" in out
    assert _heavy(modules, ("pydantic", "sqlalchemy", "psycopg", "council.domain.results")) == []


@pytest.mark.parametrize("args", [["thread", "list", "--json"], ["thread", "list"]])
def test_a_read_imports_none_of_the_heavy_modules(db_url: str, args: list[str]) -> None:
    code, modules, out = _loaded(args, db_url)
    assert code == 0
    if "--json" in args:
        assert json.loads(out) == {"items": []}
    assert "psycopg" in modules  # it did read the database
    assert _heavy(modules) == []
