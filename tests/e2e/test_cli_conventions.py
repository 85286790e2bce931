"""CLI conventions (issue 18 §6): --version, shell completion, --help grouped by
job, the database URL (also for the read-only role) and psql, `status` when
nothing runs, and the dispatch summary. Real processes, real Postgres."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

from council.cli.main import PANEL_ORDER, PANELS
from council.cli.run_cmds import dispatch_summary

ROOT = Path(__file__).resolve().parents[2]


def test_version_completion_and_help_grouped_by_job(cli: Any) -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    shown = cli("--version")
    assert shown.code == 0 and shown.stdout.strip() == f"council {version}"
    # the shell named, not detected from this process's ancestors (under pytest-xdist no
    # shell is among them, and typer's detection then finds none)
    completion = cli("--show-completion", "bash", env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert completion.code == 0 and "complete" in completion.stdout
    helped = cli("--help")
    assert helped.code == 0
    panels = [p for p in PANEL_ORDER if f"─ {p} " in helped.stdout]
    assert panels == [p for p in PANEL_ORDER if p in PANELS.values()]
    assert "Other commands" not in helped.stdout  # every command is in the table


def test_db_url_for_the_application_and_the_read_only_role(cli: Any, db_url: str) -> None:
    app = cli("db", "url", "--json").json()
    assert app == {"url": db_url, "role": "council_app", "read_only": False}
    read_only = cli("db", "url", "--read-only", "--json").json()
    assert read_only["role"] == "council_dashboard" and read_only["read_only"] is True
    assert cli("db", "url").stdout.strip() == db_url
    if shutil.which("psql") is None:
        pytest.skip("no psql here")
    who = cli("db", "psql", "--read-only", "--", "-At", "-c", "SELECT current_user")
    assert who.code == 0, who.stderr
    assert who.stdout.strip() == "council_dashboard"
    refused = cli("db", "psql", "--read-only", "--", "-At", "-c", "SELECT count(*) FROM threads")
    assert refused.code != 0 and "permission denied" in refused.stderr


def test_db_url_read_only_never_prints_the_applications_password(cli: Any) -> None:
    """Issue 44: without COUNCIL_DASHBOARD_DATABASE_URL, `db url --read-only` printed
    council_dashboard followed by council_app's password."""
    app_url = (
        "postgresql://council_app:app-password-0123@db.example:5432/council?password=q-0123&sslmode=require"
    )
    shown = cli("db", "url", "--read-only", "--json", env={"COUNCIL_DATABASE_URL": app_url})
    assert shown.code == 0, shown.stderr
    assert shown.json() == {
        "url": "postgresql://council_dashboard@db.example:5432/council?sslmode=require",
        "role": "council_dashboard",
        "read_only": True,
    }
    assert "0123" not in shown.stdout + shown.stderr


def test_status_says_down_when_nothing_runs(cli: Any) -> None:
    status = cli("status", "--json").json()
    assert status["state"] == "down"
    assert "stack is down" in cli("status").stdout


@pytest.mark.parametrize("args", [("thread", "list"), ("node", "list", "--thread", "0123456789ab")])
def test_with_the_stack_down_and_no_database_a_command_exits_1_not_2(cli: Any, args: tuple[str, ...]) -> None:
    # Given no stack running here and no COUNCIL_DATABASE_URL: the database cannot answer
    # When a command needs it
    done = cli(*args, "--json", env={"COUNCIL_DATABASE_URL": ""})
    # Then it exits 1 (the database not answering), not 2 (bad input), and says what to do
    assert done.code == 1, done.stderr
    assert done.json() == {
        "code": 1,
        "error": "the database is not answering: no stack runs here (`council up` starts it) "
        "and COUNCIL_DATABASE_URL is unset",
    }
    assert "`council up` starts it" in cli(*args, env={"COUNCIL_DATABASE_URL": ""}).stderr


def test_the_dispatch_summary_counts_the_runs_of_every_round() -> None:
    queued = {
        "dispatch_id": "d1",
        "mode": "deliberative",
        "rounds": 2,
        "agents": ["claude", "codex", "glm"],
        "run_ids": ["a", "b", "c"],
        "already_dispatched": False,
        "runs": None,
    }
    assert dispatch_summary(queued) == (
        "dispatch d1 (deliberative, 2 round(s)): 6 run(s) in all, 3 queued now; "
        "later rounds are queued as each round ends"
    )
    ended = {**queued, "runs": [{"status": "succeeded"}] * 5 + [{"status": "failed"}]}
    assert (
        dispatch_summary(ended)
        == "dispatch d1 (deliberative, 2 round(s)): 6 run(s) in all — 1 failed, 5 succeeded"
    )
