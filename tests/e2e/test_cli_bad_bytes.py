"""Bad input the CLI gets from outside its options (issue 30 part 6): bytes in argv that
are not UTF-8, and a malformed COUNCIL_DATABASE_URL. Each is one line on stderr, one JSON
document under --json, exit 2, never a traceback, never the URL's password; nothing is
written. Real CLI processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine

from tests.integration.test_counterfactual import row_counts

PASSWORD = "s3cr3t-db-pw-8d1f"


def _council(args: list[str | bytes], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "council.cli", *args],
        env=env, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=120,
    )  # fmt: skip


def _env(tmp_path: Path, db_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env.update(COUNCIL_DATABASE_URL=db_url, COUNCIL_HOME=str(tmp_path), COUNCIL_OFFLINE="1")
    return env


def _one_line_and_one_document(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["code"] == code and document["error"]
    return lines[0]


def test_an_argument_that_is_not_utf_8_is_one_line_exit_2_and_writes_nothing(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    before = row_counts(engine)
    title: bytes = b"caf\xe9 \xff\xfe"  # Latin-1, not UTF-8
    done = _council(
        ["thread", "create", "--title", title, "--objective", "o", "--json"], _env(tmp_path, db_url), tmp_path
    )
    assert "argument 4 is not UTF-8 text" in _one_line_and_one_document(done, 2)
    human = _council(
        ["thread", "create", "--title", title, "--objective", "o"], _env(tmp_path, db_url), tmp_path
    )
    assert human.returncode == 2 and len(human.stderr.strip().splitlines()) == 1, human.stderr
    assert "Traceback" not in human.stderr
    assert row_counts(engine) == before


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://app:{PASSWORD}@[::1/council",
        f"postgresql://app:{PASSWORD}@127.0.0.1:99999/council",
        f"postgresql://app:{PASSWORD}@127.0.0.1:port/council",
        f"postgresql://app:{PASSWORD}@127.0.0.1/council?{PASSWORD}=1",
        f"not a URL {PASSWORD}",
        f"mysql://app:{PASSWORD}@127.0.0.1/council",
        f"app:{PASSWORD}@127.0.0.1/council",
    ],
)
def test_a_malformed_database_url_never_prints_its_password(tmp_path: Path, url: str) -> None:
    env = _env(tmp_path, url)
    for args in (["thread", "list", "--json"], ["db", "url", "--json"]):
        done = _council(args, env, tmp_path)
        line = _one_line_and_one_document(done, 2)
        assert "COUNCIL_DATABASE_URL" in line or "Postgres URL" in line, line
        assert PASSWORD not in done.stdout + done.stderr
