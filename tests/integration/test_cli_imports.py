"""The CLI's import budget (issue 19): `council --help` and a read such as
`council thread list --json` are started by scripts hundreds of times, so
neither may import what it does not need — no model gateway, broker, web
app, metrics or process tools (and `--help` not even pydantic or the
database driver). The read goes further: it runs on psycopg alone (no
SQLAlchemy, no table definitions, no engine), imports only the command module
of its first word, and with ``--json`` no Rich. Each is run in a fresh
interpreter against a migrated database, and the modules it loaded are listed
from ``sys.modules``; benchmarks/cli.py measures what that buys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine

from council.domain.results.threads import ThreadListed
from council.services.threads import create_thread
from tests.engines import uow_of

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
# Beyond HEAVY, what the script-hot read `council thread list` leaves alone: the ORM-free
# Core and what is built on it, and every command module but the one of its first word.
NOT_ON_THE_READ = (
    "sqlalchemy",
    "council.ledger.db",
    "council.ledger.lookup",
    "council.ledger.threads",
    "council.domain.results.graph",
    "council.domain.results.events",
    *(
        f"council.cli.{name}"
        for name in (
            "consolidation_cmds",
            "demo_cmd",
            "graph_cmds",
            "learning_cmds",
            "mcp_cmd",
            "reentry_cmds",
            "reversal_cmds",
            "run_cmds",
            "serve_cmd",
            "stack_cmds",
            "watch_cmd",
            "worker_cmd",
        )
    ),
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
    # Nothing below the faces: listing the commands opens no unit of work.
    below = ("council.bootstrap", "council.services", "council.ledger", "council.sql", "council.adapters")
    assert _heavy(modules, below) == []


@pytest.mark.parametrize("args", [["thread", "list", "--json"], ["thread", "list"]])
def test_a_read_imports_none_of_the_heavy_modules(db_url: str, args: list[str]) -> None:
    code, modules, out = _loaded(args, db_url)
    assert code == 0
    if "--json" in args:
        assert json.loads(out) == {"items": []}
    assert "psycopg" in modules  # it did read the database
    assert _heavy(modules) == []
    assert _heavy(modules, NOT_ON_THE_READ) == []
    assert "council.cli.ledger_cmds" in modules  # the one command module it needs
    # Rich renders the table of a plain `thread list`; with --json nothing is rendered.
    assert ("rich" in modules) is ("--json" not in args)


def test_a_json_read_lists_what_the_ledger_holds_without_sqlalchemy(db_url: str, engine: Engine) -> None:
    made = create_thread(uow_of(engine), title="listed", objective="o", actor="test:imports")
    code, modules, out = _loaded(["thread", "list", "--json"], db_url)
    assert code == 0 and "sqlalchemy" not in modules
    listed = {**made.model_dump(), "status": "empty", "runs": 0, "runs_in_flight": 0, "cost_usd": 0.0,
              "runs_unpriced": 0}  # fmt: skip
    assert json.loads(out) == {"items": [ThreadListed.model_validate(listed).json_document()]}


def test_a_failing_json_read_still_prints_one_error_document(db_url: str) -> None:
    """No SQLAlchemy to wrap the driver's error: the project's mapping still applies."""
    broken = db_url.rsplit("/", 1)[0] + "/no_such_database_here"
    code, modules, out = _loaded(["thread", "list", "--json"], broken)
    assert code == 1 and "sqlalchemy" not in modules
    document = json.loads(out)
    assert document["code"] == 1 and "no_such_database_here" in document["error"]
